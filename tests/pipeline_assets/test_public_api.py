"""The Dagster code location uses the library through its public face only (`normalization_core.api`)."""
from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from normalization_core import api
import pipeline_assets

PUBLIC = {"normalization_core.api", "lakenorm_app.commands"}


def library_imports(path: Path) -> Iterator[str]:
    """The `normalization_core` modules a file imports (`from normalization_core import x` counts as `.x`)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module == "normalization_core":
            yield from (f"normalization_core.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("normalization_core."):
            yield node.module
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name.startswith("normalization_core"))


def test_pipeline_assets_import_the_library_through_its_api_only():
    folder = Path(pipeline_assets.__file__).parent
    used = {(path.name, module) for path in sorted(folder.glob("*.py")) for module in library_imports(path)}
    assert {module for _, module in used} <= PUBLIC, sorted(u for u in used if u[1] not in PUBLIC)


def test_every_public_name_is_defined():
    assert [name for name in api.__all__ if not hasattr(api, name)] == []
