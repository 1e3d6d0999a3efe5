"""A few rows made on the driver (registry, schema versions, file ledger) as a DataFrame, sent as Arrow.

Classic PySpark sends a Python list through a Python RDD, which starts Python worker processes on the
executors (with whatever `python3` is on their PATH); an Arrow table goes to the JVM as it is, and Spark Connect
sends local data that way too.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema


def local_rows(spark: SparkSession, rows: Sequence[Sequence[Any] | Mapping[str, Any]], schema: T.StructType
               ) -> DataFrame:
    """`rows` (tuples in the schema's order, or dicts by name) as a DataFrame of exactly `schema`."""
    names = schema.fieldNames()
    records = [dict(row) if isinstance(row, Mapping) else dict(zip(names, row, strict=True)) for row in rows]
    for record in records:
        if list(record) != names:
            raise ValueError(f"row fields {list(record)} are not the schema's {names}")
    table = pa.Table.from_pylist(records, schema=to_arrow_schema(schema, timezone="UTC"))
    # one partition: a write of a few rows makes one file (split over the session's cores it made one per core)
    return spark.createDataFrame(table, schema).coalesce(1)
