"""Rebuild a stream's typed, history, current and child tables from its raw table alone (SPEC §7)."""
from __future__ import annotations

from functools import partial

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from normalization_core import columns as C
from normalization_core.config import LakenormConfig
from normalization_core.dedup_load import rebuild_dedup_tables
from normalization_core.errors import ConfigError
from normalization_core.io.delta import is_delta_table, read_table, replace_all, run_concurrently
from normalization_core.plan import StreamPlan, stream_plans
from normalization_core.source_tables import SourceTables
from normalization_core.transform.nesting import typed_tables
from normalization_core.transform.parse import parse_records


def rebuild_stream(spark: SparkSession, config: LakenormConfig, source_name: str, stream: str) -> dict[str, int]:
    """Replace every typed table of `stream` with what its normalized loads' raw rows give; rows per table.

    Only loads the registry lists as normalized count (a load absent from it did not complete).
    """
    tables = SourceTables.of(config, source_name)
    source, names = tables.source, tables.names
    plan = stream_plans(source, stored_in=tables).get(stream)  # an inferred stream: its newest stored schema
    if plan is None:
        raise ConfigError(f"source {source.name!r}", f"stream {stream!r} has no typed tables to rebuild "
                                                     "(it is not in the catalog and has no stored schema)")
    raw_path = tables.raw_path(stream)
    if not is_delta_table(spark, raw_path):
        raise ConfigError(f"source {source.name!r}", f"stream {stream!r} has no raw table at {raw_path}; "
                                                     "normalize a load first")
    loads = _normalized_loads(spark, tables, stream)
    raw = read_table(spark, raw_path).join(loads.select(F.col(C.LOADS_LOAD_ID).alias(names.load_id)),
                                           names.load_id, "left_semi")
    if plan.mode == "append_dedup":
        return rebuild_dedup_tables(spark, tables, plan, raw)
    if plan.mode == "overwrite":
        newest = loads.orderBy(F.col(C.LOADS_CREATED_AT).desc(), F.col(C.LOADS_LOAD_ID).desc()).limit(1)
        raw = raw.join(newest.select(F.col(C.LOADS_LOAD_ID).alias(names.load_id)), names.load_id, "left_semi")
    return _rebuild_typed(spark, tables, plan, raw)


def _normalized_loads(spark: SparkSession, tables: SourceTables, stream: str) -> DataFrame:
    path = tables.registry_path
    if not is_delta_table(spark, path):
        raise ConfigError(f"source {tables.source.name!r}", f"no load registry at {path}; normalize a load first")
    return (read_table(spark, path)
            .where((F.col(C.LOADS_STREAM) == stream) & (F.col(C.LOADS_STATUS) == C.STATUS_NORMALIZED)))


def _rebuild_typed(spark: SparkSession, tables: SourceTables, plan: StreamPlan, raw: DataFrame) -> dict[str, int]:
    names = tables.names
    parsed = parse_records(raw, names, plan.schema).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        frames = typed_tables(parsed, names, plan.schema, normalized_at=F.current_timestamp())
        paths = {t: tables.path(t) for t in frames}
        run_concurrently([partial(replace_all, df, paths[t]) for t, df in frames.items()])
    finally:
        parsed.unpersist()
    return {t: read_table(spark, p).count() for t, p in paths.items()}
