"""The package root shows the architecture (issue 37): `normalization_core/` holds its public face (`api.py`),
the vocabulary every layer shares (`columns.py`: system columns, `errors.py`: exceptions) and one sub-package per
layer; the pure layers and the I/O edge import no layer above them; the application (`lakenorm_app`) uses the
library through `api` only, and nothing in the library or the Dagster code imports the application."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "normalization_core"
ROOT_MODULES = {"__init__.py", "api.py", "columns.py", "errors.py"}
LAYERS = {"naming", "schema", "transform", "io", "inputs", "configuration", "plans", "dispositions", "checks", "passes"}
LOWER = ("naming", "schema", "transform", "io")
"""The pure layers and the I/O edge, which import none of the layers that assemble a pass."""
UPPER = ("configuration", "inputs", "plans", "dispositions", "checks", "passes", "api")


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports (`from pkg import name` counts as `pkg.name` too), at any depth."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return found


def test_the_package_root_holds_the_api_the_shared_vocabulary_and_one_package_per_layer():
    modules = {p.name for p in LIBRARY.glob("*.py")}
    packages = {p.name for p in LIBRARY.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert modules == ROOT_MODULES
    assert packages == LAYERS
    assert not [p for p in LIBRARY.iterdir() if p.is_dir() and p.name != "__pycache__" and p.name not in LAYERS]


def test_the_pure_layers_and_the_io_edge_import_no_layer_above_them():
    upward = {}
    for layer in LOWER:
        for path in sorted((LIBRARY / layer).rglob("*.py")):
            above = sorted(m for m in imported_modules(path)
                           if any(m == f"normalization_core.{u}" or m.startswith(f"normalization_core.{u}.") for u in UPPER))
            if above:
                upward[path.relative_to(ROOT).as_posix()] = above
    assert upward == {}


def test_the_application_uses_the_library_through_its_api_and_nothing_imports_the_application():
    app = {path.relative_to(ROOT).as_posix(): sorted(m for m in imported_modules(path) if m.startswith("normalization_core")
                                                     and not m.startswith("normalization_core.api"))
           for path in sorted((ROOT / "lakenorm_app").glob("*.py"))}
    assert {path: used for path, used in app.items() if used} == {}
    users = [path.relative_to(ROOT).as_posix() for package in ("normalization_core", "pipeline_assets")
             for path in sorted((ROOT / package).rglob("*.py"))
             if any(m.startswith("lakenorm_app") for m in imported_modules(path))]
    assert users == []
