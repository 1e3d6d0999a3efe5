"""A key range as SQL (the MERGE condition: Delta operations as SQL) holds the rows its DataFrame
predicate holds, for every key type with a safe literal."""
from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest
from pyspark.sql import functions as F

from normalization_core.transform.scd import KeyRange, sql_literal
from normalization_core.transform.sql_text import column_name

KEY = "i.d`k"
"""A key column named as `direct` keeps a key: a dot and a backtick, read only when quoted."""


@pytest.mark.parametrize(("kind", "values"), [
    ("long", [-(2 ** 40), -3, 0, 5, 2 ** 40, None]),
    ("int", [-7, 1, 9, None]),
    ("string", ["a'b", "back\\slash", "\\u0041", "zeta", "", None]),
    ("date", [date(2024, 1, 1), date(2024, 2, 29), date(1999, 12, 31), None]),
    ("double", [-1.5, 0.1, 2.5e20, float("nan"), None]),
    ("decimal(12,3)", [Decimal("-1.250"), Decimal("0.001"), Decimal("123456789.000"), None]),
])
@pytest.mark.parametrize("nulls", [False, True])
def test_a_key_range_as_sql_holds_the_rows_its_predicate_holds(spark, kind, values, nulls):
    table = spark.createDataFrame([(v,) for v in values], f"{column_name(KEY)} {kind}").alias("t")
    present = sorted((v for v in values if v is not None), key=str)
    for low, high in [(present[0], present[1]), (present[1], present[-1]), (present[0], present[0]), (None, None)]:
        key_range = KeyRange(KEY, low, high, nulls)
        expected = sorted(map(str, table.where(key_range.rows("t")).collect()))
        assert sorted(map(str, table.where(F.expr(key_range.predicate("t"))).collect())) == expected, (low, high)


def test_a_bound_without_a_safe_literal_is_refused():
    with pytest.raises(TypeError):
        sql_literal(True)
    assert sql_literal(2 ** 40) == str(2 ** 40) and sql_literal(float("-inf")) == "CAST('-Infinity' AS DOUBLE)"
