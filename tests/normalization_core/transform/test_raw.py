"""Splitting whole files into lines: terminators, empty files, BOM."""
from __future__ import annotations

import pytest

from normalization_core.transform.raw import split_lines


@pytest.mark.parametrize("content, lines", [
    ("", []),
    ("\n", [""]),
    ("a", ["a"]),
    ("a\n", ["a"]),
    ("a\r\nb\r\n", ["a", "b"]),
    ("a\n\nb\n\n", ["a", "", "b", ""]),
    ("\ufeff{}\n\ufeff{}", ["{}", "\ufeff{}"]),
])
def test_split_lines(spark, content, lines):
    files = spark.createDataFrame([("s", "f.jsonl", content)], "stream string, file string, content string")
    rows = split_lines(files).orderBy("line").collect()
    assert [r["text"] for r in rows] == lines
    assert [r["line"] for r in rows] == list(range(1, len(lines) + 1))
