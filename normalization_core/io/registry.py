"""The load registry (`_norm_loads`, SPEC §3): one row per (load ID, stream) normalized.

A load ID absent from it, or not `normalized` there, did not complete. Under the `dlt` convention this
registry is `_dlt_stream_loads`, and `_dlt_loads` has dlt's shape: one row per load, status 0.
"""
from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime

import pyarrow.compute as pc
from deltalake.exceptions import DeltaError
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from normalization_core import columns as C
from normalization_core.io.delta import is_delta_table, read_table, replace_where
from normalization_core.io.load_writes import replace_loads
from normalization_core.io.local_rows import local_rows
from normalization_core.io.storage import open_delta_table
from normalization_core.transform.sql_text import in_list

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
    T.StructField(C.LOADS_DISCARDED_ROWS, T.MapType(T.StringType(), T.LongType())),
    T.StructField(C.LOADS_DISCARDED_VALUES, T.MapType(T.StringType(), T.LongType())),
    T.StructField(C.LOADS_TABLE_VERSIONS, T.MapType(T.StringType(), T.LongType())),
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
    discarded_rows: dict[str, int] = field(default_factory=dict)
    """Rows the schema contract left out, per typed table (only tables that lost some)."""
    discarded_values: dict[str, int] = field(default_factory=dict)
    """Values the schema contract left out of written rows, per typed table."""
    table_versions: dict[str, int] = field(default_factory=dict)
    """The Delta version of this load's commit per table written (`io.table_versions`)."""


def record_loads(spark: SparkSession, path: str, load_ids: list[str], records: list[LoadRecord],
                 streams: Sequence[str] | None = None) -> None:
    """Replace the registry rows of the loads (one per load and stream) in one commit; with `streams`
    (a pass over some streams only), only the rows of those streams: the others' rows stay as they are."""
    rows = local_rows(spark, [asdict(r) for r in records], REGISTRY_SCHEMA)
    if streams is None:
        replace_loads(rows, path, C.LOADS_LOAD_ID, load_ids)
    else:
        replace_where(rows, path, f"{in_list(C.LOADS_LOAD_ID, load_ids)} AND {in_list(C.LOADS_STREAM, streams)}")


DLT_LOADS_SCHEMA = T.StructType([
    T.StructField(C.LOADS_LOAD_ID, T.StringType()),
    T.StructField(C.DLT_LOADS_SCHEMA_NAME, T.StringType()),
    T.StructField(C.LOADS_STATUS, T.LongType()),
    T.StructField(C.DLT_LOADS_INSERTED_AT, T.TimestampType()),
    T.StructField(C.LOADS_SCHEMA_HASH, T.StringType()),
])
"""dlt's `_dlt_loads` columns and types."""


def record_dlt_loads(spark: SparkSession, path: str, records: list[LoadRecord]) -> None:
    """dlt's `_dlt_loads`: one row per load (schema name: the source), replaced in one commit."""
    by_load: dict[str, list[LoadRecord]] = {}
    for record in records:
        by_load.setdefault(record.load_id, []).append(record)
    rows = [(load_id, group[0].source, C.DLT_STATUS_LOADED, group[0].normalized_at, load_schema_hash(group))
            for load_id, group in by_load.items()]
    replace_loads(local_rows(spark, rows, DLT_LOADS_SCHEMA), path, C.LOADS_LOAD_ID, list(by_load))


def load_schema_hash(records: list[LoadRecord]) -> str:
    """One hash of the schemas a load used: each stream's version hash, by stream (base64 like dlt's)."""
    lines = sorted(f"{r.stream}\t{r.schema_version_hash or ''}" for r in records)
    return base64.b64encode(hashlib.sha3_256("\n".join(lines).encode("utf-8")).digest()).decode("ascii")


def normalized_load_ids(spark: SparkSession, path: str) -> set[str]:
    """Load IDs with every stream registered as normalized (small metadata, read on the driver)."""
    if not is_delta_table(spark, path):
        return set()
    done = (read_table(spark, path).groupBy(C.LOADS_LOAD_ID)
            .agg(F.min(F.col(C.LOADS_STATUS) == C.STATUS_NORMALIZED).alias("ok"))
            .where("ok").select(C.LOADS_LOAD_ID))
    return {row[0] for row in done.collect()}  # one short string per load: metadata, not data


def normalized_streams(spark: SparkSession, path: str, load_ids: Sequence[str] | None = None
                       ) -> dict[str, dict[str, str | None]]:
    """Per load ID, its streams registered as normalized and their schema version hash (metadata)."""
    if not is_delta_table(spark, path):
        return {}
    rows = read_table(spark, path).where(F.col(C.LOADS_STATUS) == C.STATUS_NORMALIZED)
    if load_ids is not None:
        rows = rows.where(F.col(C.LOADS_LOAD_ID).isin(list(load_ids)))
    found: dict[str, dict[str, str | None]] = {}
    for row in rows.select(C.LOADS_LOAD_ID, C.LOADS_STREAM, C.LOADS_SCHEMA_HASH).collect():  # per (load, stream)
        found.setdefault(row[0], {})[row[1]] = row[2]
    return found


def registered_streams(spark: SparkSession, path: str, load_ids: Sequence[str],
                       storage_options: dict[str, str] | None = None) -> dict[str, set[str]]:
    """Per load ID of `load_ids`, its streams registered as normalized, read for those load IDs alone: by delta-rs
    from the registry's log and the row groups whose statistics may hold them (no Spark job, the registry not
    scanned whole), else (a log delta-rs cannot read, reader features) by Spark (`normalized_streams`)."""
    if not load_ids:
        return {}
    try:
        return logged_registry(path, storage_options, load_ids)
    except DeltaError:
        return {load_id: set(streams) for load_id, streams in normalized_streams(spark, path, load_ids).items()}


def logged_registry(path: str, storage_options: dict[str, str] | None = None,
                    load_ids: Sequence[str] | None = None) -> dict[str, set[str]]:
    """Per load ID (of `load_ids`; None: every one), its streams registered as normalized, read by delta-rs (two
    columns; with `load_ids`, the row groups whose statistics may hold them); a `DeltaError` when delta-rs cannot
    read the registry exactly (reader features: deletion vectors may hide rows from it)."""
    table = open_delta_table(path, storage_options)
    if table is None:
        return {}
    if table.protocol().reader_features:
        raise DeltaError("reader features: deletion vectors may hide rows from delta-rs")
    normalized = pc.field(C.LOADS_STATUS) == C.STATUS_NORMALIZED
    wanted = normalized if load_ids is None else normalized & pc.field(C.LOADS_LOAD_ID).isin(list(load_ids))
    rows = table.to_pyarrow_dataset().to_table(columns=[C.LOADS_LOAD_ID, C.LOADS_STREAM], filter=wanted)
    found: dict[str, set[str]] = {}
    for load_id, stream in zip(*(rows.column(c).to_pylist() for c in (C.LOADS_LOAD_ID, C.LOADS_STREAM))):
        found.setdefault(load_id, set()).add(stream)  # one row per (load, stream): metadata
    return found


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
