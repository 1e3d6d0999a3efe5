"""Values cut out of a JSON line as the producer wrote them (`transform.json_text`), cases in tests/cases/json_text."""
from __future__ import annotations

from pyspark.sql import functions as F

from normalization_core.transform.json_text import MAX_DEPTH, array_elements, member_text, object_without

DEEP = "[" * (MAX_DEPTH + 2) + "1" + "]" * (MAX_DEPTH + 2)
"""Nested deeper than the cut reads: the caller's fallback is used."""


def _lines(spark, cases: list[dict]):
    return spark.createDataFrame([(c["line"].replace("DEEP", DEEP),) for c in cases], "line string")


def test_a_member_is_cut_as_written_at_its_path(spark, load_case):
    cases = load_case("json_text/cuts.json")["member"]
    lines = _lines(spark, cases)
    for case, row in zip(cases, lines.collect()):
        cut = lines.where(F.col("line") == row.line).select(
            member_text(F.col("line"), case["path"], F.lit("FALLBACK")).alias("cut")).first().cut
        assert cut == (case["expected"] if case["expected"] is not None else "FALLBACK"), case["line"]


def test_a_missing_member_stays_null(spark):
    lines = spark.createDataFrame([('{"type":"STATE"}',)], "line string")
    assert lines.select(member_text(F.col("line"), ["record"], F.lit(None).cast("string"))).first()[0] is None


def test_root_members_without_a_prefix_and_array_elements(spark, load_case):
    cases = load_case("json_text/cuts.json")
    without = _lines(spark, cases["without"]).select(object_without(F.col("line"), "_airbyte_").alias("cut"))
    assert [r.cut for r in without.collect()] == [c["expected"] for c in cases["without"]]
    elements = _lines(spark, cases["elements"]).select(array_elements(F.col("line")).alias("cut"))
    assert [r.cut for r in elements.collect()] == [c["expected"] for c in cases["elements"]]
