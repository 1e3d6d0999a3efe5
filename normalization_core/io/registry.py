"""The load registry (`_norm_loads`, SPEC §3): one row per (load ID, stream) normalized.

A load ID absent from it, or not `normalized` there, did not complete.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from normalization_core import columns as C
from normalization_core.io.delta import is_delta_table, read_table, replace_loads

REGISTRY_SCHEMA = T.StructType([
    T.StructField(C.LOADS_SOURCE, T.StringType()),
    T.StructField(C.LOADS_STREAM, T.StringType()),
    T.StructField(C.LOADS_LOAD_ID, T.StringType()),
    T.StructField(C.LOADS_CREATED_AT, T.TimestampType()),
    T.StructField(C.LOADS_NORMALIZED_AT, T.TimestampType()),
    T.StructField(C.LOADS_STATUS, T.StringType()),
    T.StructField(C.LOADS_ROWS, T.MapType(T.StringType(), T.LongType())),
    T.StructField(C.LOADS_RAW_LINES, T.LongType()),
    T.StructField(C.LOADS_REJECTED, T.LongType()),
    T.StructField(C.LOADS_SCHEMA_HASH, T.StringType()),
    T.StructField(C.LOADS_STATE, T.StringType()),
])


@dataclass(frozen=True)
class LoadRecord:
    """What normalizing one stream of one load produced."""

    source: str
    stream: str
    load_id: str
    created_at: datetime
    normalized_at: datetime
    status: str
    rows: dict[str, int] = field(default_factory=dict)
    """Rows written per table."""
    raw_lines: int = 0
    rejected_lines: int = 0
    schema_version_hash: str | None = None
    state: str | None = None
    """The extractor's cursor state (JSON text), stored, never interpreted."""


def record_loads(spark: SparkSession, path: str, load_ids: list[str], records: list[LoadRecord]) -> None:
    """Replace the registry rows of the loads (one per load and stream) in one commit."""
    rows = spark.createDataFrame([asdict(r) for r in records], REGISTRY_SCHEMA)
    replace_loads(rows, path, C.LOADS_LOAD_ID, load_ids)


def normalized_load_ids(spark: SparkSession, path: str) -> set[str]:
    """Load IDs with every stream registered as normalized (small metadata, read on the driver)."""
    if not is_delta_table(spark, path):
        return set()
    done = (read_table(spark, path).groupBy(C.LOADS_LOAD_ID)
            .agg(F.min(F.col(C.LOADS_STATUS) == C.STATUS_NORMALIZED).alias("ok"))
            .where("ok").select(C.LOADS_LOAD_ID))
    return {row[0] for row in done.collect()}  # one short string per load: metadata, not data


def is_newest_load(spark: SparkSession, path: str, stream: str, arrival_key: tuple[datetime, str]) -> bool:
    """Whether no normalized load of `stream` arrived after `arrival_key` (created_at, load_id)."""
    if not is_delta_table(spark, path):
        return True
    created, load_id = arrival_key
    later = (read_table(spark, path)
             .where((F.col(C.LOADS_STREAM) == stream) & (F.col(C.LOADS_STATUS) == C.STATUS_NORMALIZED))
             .where((F.col(C.LOADS_CREATED_AT) > F.lit(created))
                    | ((F.col(C.LOADS_CREATED_AT) == F.lit(created)) & (F.col(C.LOADS_LOAD_ID) > load_id))))
    return later.limit(1).count() == 0
