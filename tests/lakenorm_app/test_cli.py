"""`lakenorm --version` prints the version `pyproject.toml` names, the newest one CHANGELOG.md describes."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from lakenorm_app.cli import main

ROOT = Path(__file__).resolve().parents[2]


def project_version() -> str:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]


def test_version_prints_the_projects_version_and_exits(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"lakenorm {project_version()}\n"


def test_the_changelog_describes_the_version_under_what_is_unreleased():
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## \[([^]]+)\](?: - (\d{4}-\d{2}-\d{2}))?$", changelog, flags=re.MULTILINE)
    assert headings[0] == ("Unreleased", "")
    released = [version for version, date in headings[1:] if date]
    assert released and released[0] == project_version()
    assert len(released) == len(headings) - 1 == len(set(released))  # every version dated, each once
