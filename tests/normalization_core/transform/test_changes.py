"""`_norm_meta` from many change candidates: flat expressions, the same changes in column order."""
from __future__ import annotations

from pyspark.sql import functions as F

from normalization_core.transform.changes import meta_column, nulled

CANDIDATES = 1200
"""More than a wide stream's columns: a chain of ORs this deep overflowed a quick-compiler driver's stack."""


def test_meta_of_a_thousand_and_more_candidates_keeps_the_nulled_ones_in_order(spark):
    rows = spark.range(3).select(F.col("id").cast("int").alias("i"))
    # row 0: none fails; row 1: every 500th; row 2: the last two
    failing = {1: set(range(0, CANDIDATES, 500)), 2: {CANDIDATES - 2, CANDIDATES - 1}}
    changes = [nulled(f"c{k}", (F.col("i") == 1) & F.lit(k % 500 == 0)
                      | (F.col("i") == 2) & F.lit(k >= CANDIDATES - 2)) for k in range(CANDIDATES)]
    got = {row["i"]: [c["field"] for c in row["m"]["changes"]]
           for row in rows.select("i", meta_column(changes).alias("m")).collect()}  # three test rows
    assert got == {0: [], 1: [f"c{k}" for k in sorted(failing[1])], 2: [f"c{k}" for k in sorted(failing[2])]}


def test_meta_without_candidates_is_an_empty_array(spark):
    (row,) = spark.range(1).select(meta_column([]).alias("m")).collect()
    assert row["m"]["changes"] == []
