"""Text no reader or writer refuses: lines whose bytes are not UTF-8 and lone surrogate escapes, repaired on the
executors (cases in tests/cases/text_repair/cases.json), a megabyte line included."""
from __future__ import annotations

import json

from pyspark.sql import functions as F

from normalization_core.transform.raw import parsed_record
from normalization_core.transform.text_repair import (
    first_invalid_offset,
    holds_lone_surrogate,
    invalid_bytes,
    repaired_text,
    without_lone_surrogates,
)
from tests.conftest import CASES

REPAIR = json.loads((CASES / "text_repair" / "cases.json").read_text(encoding="utf-8"))


def line_bytes(text: str) -> bytes:
    """A case's line as bytes (bytes that are not UTF-8 are written as U+DC80..U+DCFF: `surrogateescape`)."""
    return text.encode("utf-8", "surrogateescape")


def lines_as_read(spark, lines: list[bytes]):
    """The lines as Spark's text reader hands them on: strings holding the bytes unchecked."""
    frame = spark.createDataFrame([(i, bytearray(b)) for i, b in enumerate(lines)], "i int, b binary")
    return frame.select("i", F.col("b").cast("string").alias("line"))


def test_lines_that_are_not_utf8_are_repaired_and_keep_their_bytes(spark):
    cases = REPAIR["lines"]
    read = lines_as_read(spark, [line_bytes(c["bytes"]) for c in cases] + [b'{"valid": "\xc3\xa9"}'])
    kept = invalid_bytes(F.col("line"))
    rows = read.select("i", repaired_text(F.col("line")).alias("text"), kept.alias("bytes"),
                       first_invalid_offset(kept).alias("offset")).orderBy("i").collect()
    *repaired, valid = rows
    assert [r["text"] for r in repaired] == [c["text"] for c in cases]
    assert [bytes(r["bytes"]) for r in repaired] == [line_bytes(c["bytes"]) for c in cases]
    assert [r["offset"] for r in repaired] == [c["offset"] for c in cases]
    assert (valid["text"], valid["bytes"], valid["offset"]) == ('{"valid": "\u00e9"}', None, None)


def test_lone_surrogate_escapes_are_read_as_replacement_characters(spark):
    cases = REPAIR["surrogates"]
    texts = spark.createDataFrame([(i, c["text"]) for i, c in enumerate(cases)], "i int, text string")
    text = F.col("text")
    rows = texts.select("i", without_lone_surrogates(text).alias("parsed_from"), holds_lone_surrogate(text).alias("lone"),
                        parsed_record(text).cast("string").alias("variant")).orderBy("i").collect()
    for case, row in zip(cases, rows, strict=True):
        assert (row["parsed_from"], row["lone"]) == (case["parsed_from"], case["lone"]), case["name"]
        # the record parses, each value as Python reads the repaired text
        assert json.loads(row["variant"]) == json.loads(case["parsed_from"]), case["name"]


def test_a_megabyte_line_is_checked_without_exhausting_the_stack(spark):
    """The patterns' quantifiers are possessive: a line of a million characters is one loop, not a recursion."""
    bad = b'{"a": "' + b"x" * (1 << 20) + b'\xff", "e": "' + "\u00e9\U0001F600".encode() * 50_000 + b'"}'
    escapes = '{"a": "' + "\\ud83d\\ude00" * 100_000 + "\\ud800" + "\\\\ud800 " * 50_000 + '"}'
    read = lines_as_read(spark, [bad, escapes.encode()])
    kept = invalid_bytes(F.col("line"))
    rows = read.select("i", first_invalid_offset(kept).alias("offset"), holds_lone_surrogate(F.col("line")).alias("lone"),
                       parsed_record(F.col("line")).isNotNull().alias("parses")).orderBy("i").collect()
    assert [(r["offset"], r["lone"]) for r in rows] == [(bad.index(b"\xff"), False), (None, True)]
    assert rows[1]["parses"]
