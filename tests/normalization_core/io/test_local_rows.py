"""Driver-made rows (`io.local_rows`) keep every type of the registry's schema, and need no Python worker."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest
from pyspark.sql import types as T

from normalization_core.io.local_rows import local_rows

SCHEMA = T.StructType([
    T.StructField("name", T.StringType()), T.StructField("at", T.TimestampType()),
    T.StructField("rows", T.MapType(T.StringType(), T.LongType())), T.StructField("n", T.LongType())])


def test_tuples_and_dicts_become_rows_of_the_schema(spark):
    at = datetime(2024, 6, 1, 12, 30, tzinfo=timezone.utc)
    frame = local_rows(spark, [("a", at, {"t": 3}, 1), {"name": "b", "at": at, "rows": {}, "n": None}], SCHEMA)
    assert frame.schema == SCHEMA
    assert [r.asDict() for r in frame.orderBy("name").collect()] == [
        {"name": "a", "at": datetime(2024, 6, 1, 12, 30), "rows": {"t": 3}, "n": 1},  # (a UTC session)
        {"name": "b", "at": datetime(2024, 6, 1, 12, 30), "rows": {}, "n": None}]


def test_a_dict_with_other_fields_is_refused(spark):
    with pytest.raises(ValueError, match="not the schema"):
        local_rows(spark, [{"name": "a", "when": None, "rows": {}, "n": 1}], SCHEMA)
