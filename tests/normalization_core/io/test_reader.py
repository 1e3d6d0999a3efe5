"""Reading one file into numbered lines: streamed (gzip, small plain files) or read whole (plain files Spark
would split) must give the same lines as `split_lines`."""
from __future__ import annotations

import gzip
import json

import pytest

from normalization_core.io.reader import read_file_lines
from tests.conftest import CASES
from tests.normalization_core.transform.test_raw import as_bytes, expected_bytes

LINE_CASES = json.loads((CASES / "raw" / "line_splitting.json").read_text(encoding="utf-8"))["cases"]


def _lines(spark, path, relative="orders/part.jsonl"):
    rows = read_file_lines(spark, str(path), "orders", relative).orderBy("line").collect()
    assert {(r["stream"], r["file"]) for r in rows} <= {("orders", relative)}
    assert [r["line"] for r in rows] == list(range(1, len(rows) + 1))
    return [r["text"] for r in rows], [r["bytes"] and bytes(r["bytes"]) for r in rows]


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("case", LINE_CASES, ids=lambda c: repr(c["content"])[:30])
def test_file_lines(spark, tmp_path, case, compressed):
    data = as_bytes(case["content"])
    path = tmp_path / ("part.jsonl.gz" if compressed else "part.jsonl")
    path.write_bytes(gzip.compress(data) if compressed else data)
    assert _lines(spark, path) == (case["lines"], expected_bytes(case))


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gzip"])
def test_large_file_keeps_exact_line_numbers(spark, tmp_path, compressed):
    """A plain file of several MB is split into partitions by Spark: it is read whole instead, and
    every line keeps its number (and a line that is not UTF-8 its bytes); a gzip file of the same lines is one
    partition and is streamed."""
    texts = [json.dumps({"id": i, "pad": "x" * (i % 97)}) for i in range(120_000)]
    texts[70_000] = texts[70_000].replace("xx", "x\udcffx", 1)  # one byte that is not UTF-8
    data = ("\r\n".join(texts) + "\n").encode("utf-8", "surrogateescape")
    path = tmp_path / ("big.jsonl.gz" if compressed else "big.jsonl")
    path.write_bytes(gzip.compress(data) if compressed else data)
    lines = read_file_lines(spark, str(path), "orders", "big")
    [bad] = lines.where("bytes IS NOT NULL").collect()
    assert (bad["line"], bytes(bad["bytes"]), bad["text"]) == (
        70_001, texts[70_000].encode("utf-8", "surrogateescape"), texts[70_000].replace("\udcff", "\ufffd"))
    rows = lines.select("line", "text")
    ids = rows.selectExpr("line", "cast(get_json_object(text, '$.id') as long) + 1 as expected",
                          "text like '%\r' as has_cr")
    assert ids.count() == len(texts)
    assert ids.where("line != expected or has_cr").count() == 0
