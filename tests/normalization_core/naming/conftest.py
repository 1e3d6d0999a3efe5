"""Feeds golden vectors from tests/cases/naming/*.json to tests marked `@pytest.mark.cases(file, **filters)`."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

CASES_DIR = Path(__file__).resolve().parents[2] / "cases" / "naming"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "cases(file, **filters): parametrize `case` with the matching entries of tests/cases/naming/<file>")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marker = metafunc.definition.get_closest_marker("cases")
    if marker is None or "case" not in metafunc.fixturenames:
        return
    cases = load_cases(marker.args[0], **marker.kwargs)
    assert cases, f"no cases in {marker.args[0]} matching {marker.kwargs}"
    metafunc.parametrize("case", cases, ids=[_case_id(case) for case in cases])


def load_cases(file: str, **filters: Any) -> list[dict[str, Any]]:
    """Entries of a case file whose fields equal `filters`."""
    cases = json.loads((CASES_DIR / file).read_text(encoding="utf-8"))["cases"]
    return [case for case in cases if all(case.get(key) == value for key, value in filters.items())]


def _case_id(case: dict[str, Any]) -> str:
    shown = case.get("input", case.get("json_path", case.get("key_path", case.get("originals"))))
    text = repr(shown)
    return text if len(text) <= 60 else text[:57] + "..."
