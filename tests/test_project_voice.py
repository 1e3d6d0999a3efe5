"""The project speaks of the product: no tracked file (code, comments, tests, docs, benchmarks, deployment, the
Makefile) names the development process that made it. A figure names its date, its commit and the machine; a
reason names the change (a commit, or a version in CHANGELOG.md), never a work session or a ticket number."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROCESS_WORDS = re.compile(
    r"\bsessions?[ -]\d"  # a work session by number, or a range of them
    r"|\bhelper-\d"  # a helper by number
    r"|\bissues? #?\d"  # a ticket by number as the reason
    r"|\bat the stop\b|\bthe stop's\b",  # the end of a work session
    re.IGNORECASE)


def tracked_files() -> list[Path]:
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60)
    except (OSError, subprocess.CalledProcessError) as error:
        pytest.skip(f"not a git checkout: {error}")
    return [ROOT / name for name in listed.stdout.decode().split("\0") if name]


def text_of(path: Path) -> str | None:
    """The file's text; None for a binary file (or one deleted but not yet staged)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    if b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def process_words(text: str) -> list[tuple[int, str]]:
    return [(number, match.group(0)) for number, line in enumerate(text.splitlines(), 1)
            for match in PROCESS_WORDS.finditer(line)]


def test_no_tracked_file_names_the_development_process():
    found = [f"{path.relative_to(ROOT)}:{number}: {word!r}" for path in tracked_files()
             if (text := text_of(path)) is not None for number, word in process_words(text)]
    assert found == []


SPELLED_APART = {"session": "session", "issue": "issue", "Issue": "Issue", "helper": "helper", "stop": "stop"}
"""The examples below name the words through these, so that this file passes its own scan."""


@pytest.mark.parametrize("example", [
    "86-90 s in {session} 21", "({session}s 8-17)", "{session} 25's inference", "The {session}-9 code",
    "a run by {helper}-3", "({issue} 34)", "{issue}s 33, 35", "{Issue} #12", "`make test` at the {stop}",
    "the {stop}'s code"])
def test_a_process_word_is_found(example):
    assert process_words(example.format(**SPELLED_APART)) != []


@pytest.mark.parametrize("line", [
    "the Spark session's catalog", "a warm session (37 jobs)", "one Spark session per process",
    "2026-11-28, 6f28945: 1,428 passed", "`lakenorm engine stop`", "a helper function", "no issue with 3 loads"])
def test_the_products_own_words_are_not(line):
    assert process_words(line) == []
