"""Splitting whole files into lines: terminators, empty files, BOM, bytes that are not UTF-8 (cases shared with the
streaming reader)."""
from __future__ import annotations

import json

import pytest
from pyspark.sql import functions as F

from normalization_core.transform.raw import split_lines
from tests.conftest import CASES

LINE_CASES = json.loads((CASES / "raw" / "line_splitting.json").read_text(encoding="utf-8"))["cases"]


def as_bytes(text: str) -> bytes:
    """A case's text as the bytes it stands for (U+DC80..U+DCFF: bytes that are not UTF-8)."""
    return text.encode("utf-8", "surrogateescape")


def expected_bytes(case: dict) -> list[bytes | None]:
    return [None if b is None else as_bytes(b) for b in case.get("bytes", [None] * len(case["lines"]))]


@pytest.mark.parametrize("case", LINE_CASES, ids=lambda c: repr(c["content"])[:30])
def test_split_lines(spark, case):
    files = spark.createDataFrame([("s", "f.jsonl", bytearray(as_bytes(case["content"])))],
                                  "stream string, file string, content binary")
    rows = split_lines(files.withColumn("content", F.col("content").cast("string"))).orderBy("line").collect()
    assert [r["text"] for r in rows] == case["lines"]
    assert [r["bytes"] and bytes(r["bytes"]) for r in rows] == expected_bytes(case)
    assert [r["line"] for r in rows] == list(range(1, len(case["lines"]) + 1))
