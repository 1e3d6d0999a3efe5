"""Splitting whole files into lines: terminators, empty files, BOM (cases shared with the streaming reader)."""
from __future__ import annotations

import json

import pytest

from normalization_core.transform.raw import split_lines
from tests.conftest import CASES

LINE_CASES = json.loads((CASES / "raw" / "line_splitting.json").read_text(encoding="utf-8"))["cases"]


@pytest.mark.parametrize("case", LINE_CASES, ids=lambda c: repr(c["content"])[:30])
def test_split_lines(spark, case):
    files = spark.createDataFrame([("s", "f.jsonl", case["content"])], "stream string, file string, content string")
    rows = split_lines(files).orderBy("line").collect()
    assert [r["text"] for r in rows] == case["lines"]
    assert [r["line"] for r in rows] == list(range(1, len(case["lines"]) + 1))
