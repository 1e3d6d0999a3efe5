"""Rebuild a stream's typed, history, current and child tables from its raw table alone (SPEC §7).

A rebuild is the load path over all of raw: the stream's plan is made as a load's is (`load_plans`: an inferred
stream's schema evolved from its stored one and kept to its schema contract, whose discards apply again), and its
disposition writes the tables whole (`Disposition.rebuild`).
"""
from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from normalization_core import columns as C
from normalization_core.configuration.config import LakenormConfig
from normalization_core.errors import ConfigError
from normalization_core.io.delta import is_delta_table, read_table
from normalization_core.plans.load_plans import load_plans
from normalization_core.plans.source_tables import SourceTables
from normalization_core.plans.stream_plans import stream_plans, with_stored_plans


def rebuild_stream(spark: SparkSession, config: LakenormConfig, source_name: str, stream: str) -> dict[str, int]:
    """`rebuild_source_stream` of the source named `source_name`."""
    return rebuild_source_stream(spark, SourceTables.of(config, source_name), stream)


def rebuild_source_stream(spark: SparkSession, tables: SourceTables, stream: str) -> dict[str, int]:
    """Replace every typed table of `stream` with what its normalized loads' raw rows give; rows per table.

    Only loads the registry lists as normalized count (a load absent from it did not complete).
    """
    source, names = tables.source, tables.names
    catalog_plans = stream_plans(source)
    known = with_stored_plans(tables, catalog_plans).get(stream)  # an inferred stream: its newest stored schema
    if known is None:
        raise ConfigError(f"source {source.name!r}", f"stream {stream!r} has no typed tables to rebuild "
                                                     "(it is not in the catalog and has no stored schema)")
    raw_path = tables.raw_path(stream)
    if not is_delta_table(spark, raw_path):
        raise ConfigError(f"source {source.name!r}", f"stream {stream!r} has no raw table at {raw_path}; "
                                                     "normalize a load first")
    loads = known.disposition.loads_to_rebuild(_normalized_loads(spark, tables, stream))
    raw = read_table(spark, raw_path).join(loads.select(F.col(C.LOADS_LOAD_ID).alias(names.load_id)),
                                           names.load_id, "left_semi")
    plan = load_plans(spark, tables, catalog_plans, [stream], lambda _: raw)[stream]
    return plan.disposition.rebuild(spark, tables, plan, raw)


def _normalized_loads(spark: SparkSession, tables: SourceTables, stream: str) -> DataFrame:
    path = tables.registry_path
    if not is_delta_table(spark, path):
        raise ConfigError(f"source {tables.source.name!r}", f"no load registry at {path}; normalize a load first")
    return (read_table(spark, path)
            .where((F.col(C.LOADS_STREAM) == stream) & (F.col(C.LOADS_STATUS) == C.STATUS_NORMALIZED)))
