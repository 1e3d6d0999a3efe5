"""What earlier passes recorded about loads, read back as `LoadResult`s (checks run without normalizing)."""
from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from normalization_core import columns as C
from normalization_core.configuration.config import LakenormConfig
from normalization_core.io.delta import is_delta_table, read_table
from normalization_core.io.load_writes import rows_per_load
from normalization_core.io.registry import normalized_streams
from normalization_core.passes.results import LoadResult, StreamResult
from normalization_core.plans.source_tables import SourceTables


def registered_results(spark: SparkSession, config: LakenormConfig, source_name: str, load_ids: Sequence[str],
                       streams: Sequence[str]) -> list[LoadResult]:
    """`registered_source_results` of the source named `source_name`."""
    return registered_source_results(spark, SourceTables.of(config, source_name), load_ids, streams)


def registered_source_results(spark: SparkSession, tables: SourceTables, load_ids: Sequence[str],
                              streams: Sequence[str]) -> list[LoadResult]:
    """Per load ID, its registered (normalized) streams among `streams` with their line and row counts,
    and its quarantined lines; a load the registry does not list has no streams."""
    source, names, path = tables.source, tables.names, tables.registry_path
    rows = [] if not is_delta_table(spark, path) else (
        read_table(spark, path)
        .where(F.col(C.LOADS_LOAD_ID).isin(list(load_ids)) & F.col(C.LOADS_STREAM).isin(list(streams))
               & (F.col(C.LOADS_STATUS) == C.STATUS_NORMALIZED))
        .select(C.LOADS_LOAD_ID, C.LOADS_STREAM, C.LOADS_ROWS, C.LOADS_RAW_LINES, C.LOADS_REJECTED,
                C.LOADS_SCHEMA_HASH)
        .collect())  # one registry row per (load, stream): metadata
    quarantine = tables.quarantine_path
    quarantined = rows_per_load(spark, quarantine, names.load_id, load_ids) if is_delta_table(spark, quarantine) else {}
    by_load: dict[str, dict[str, StreamResult]] = {load_id: {} for load_id in load_ids}
    for row in rows:
        raw = tables.raw_table(row[C.LOADS_STREAM])
        typed = {t: n for t, n in (row[C.LOADS_ROWS] or {}).items() if t != raw}
        by_load[row[C.LOADS_LOAD_ID]][row[C.LOADS_STREAM]] = StreamResult(
            row[C.LOADS_STREAM], raw, row[C.LOADS_RAW_LINES], row[C.LOADS_REJECTED], typed_rows=typed,
            schema_version_hash=row[C.LOADS_SCHEMA_HASH])
    return [LoadResult(source.name, load_id, by_load[load_id], quarantined.get(load_id, 0)) for load_id in load_ids]


def registered_load_ids(spark: SparkSession, source_tables: SourceTables) -> list[str]:
    """Load IDs with at least one stream registered as normalized, sorted."""
    return sorted(normalized_streams(spark, source_tables.registry_path))
