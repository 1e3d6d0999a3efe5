"""Typed root and nested-child tables of one stream for one load (SPEC §4.2, §5.1, §6).

The raw rows of the load are parsed once; every table of the stream is projected from that parse.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from normalization_core.catalog import StreamSettings, source_catalog, stream_settings
from normalization_core.columns import SystemNames, system_names
from normalization_core.config import LakenormConfig, SourceConfig
from normalization_core.dedup_load import write_dedup_tables
from normalization_core.io.delta import last_commit_rows, replace_all, replace_load, run_concurrently
from normalization_core.io.spark import build_spark_session
from normalization_core.io.versions import latest_versions, record_version
from normalization_core.schema import StreamSchema, schema_from_json_schema, schema_hash
from normalization_core.schema.inference import evolve, infer_schema
from normalization_core.transform.counts import NulledCounts, nulled_counts, observe_nulled
from normalization_core.transform.inference import observed_types
from normalization_core.transform.nesting import parse_records, typed_tables

TYPED_CONVENTIONS = ("native", "dlt", "airbyte")


@dataclass(frozen=True)
class StreamPlan:
    """How one stream's typed tables are built and written."""

    settings: StreamSettings
    schema: StreamSchema

    @property
    def tables(self) -> list[str]:
        """Root first, parents before children."""
        return [t["name"] for t in self.schema["tables"]]

    @property
    def parents(self) -> dict[str, str | None]:
        return {t["name"]: t.get("parent") for t in self.schema["tables"]}

    @property
    def version_hash(self) -> str:
        return schema_hash(self.schema)


def stream_plans(source: SourceConfig) -> dict[str, StreamPlan]:
    """Plans for the streams typed from the source's catalog (inferred streams: `load_plans`)."""
    if source.convention not in TYPED_CONVENTIONS:
        return {}
    catalog = source_catalog(source)
    plans = {}
    for name in catalog:
        settings = stream_settings(source, catalog, name)
        schema = schema_from_json_schema(name, settings.json_schema, convention=source.convention,
                                         max_identifier_length=source.max_identifier_length,
                                         max_table_nesting=source.max_table_nesting, namespace=source.name)
        plans[name] = StreamPlan(settings, schema)
    return plans


def versions_path(config: LakenormConfig, source: SourceConfig) -> str:
    return config.table_path(source.name, system_names(source.convention).versions_table)


def load_plans(spark: SparkSession, config: LakenormConfig, source: SourceConfig, streams: Iterable[str],
               rows_of: Callable[[str], DataFrame]) -> dict[str, StreamPlan]:
    """Plans of a load's streams, each schema stored as a version (SPEC §5.3): catalog streams from the
    catalog, the others inferred from `rows_of(stream)` (their raw rows) and evolved from their stored schema."""
    catalog_plans = stream_plans(source)
    plans = {s: catalog_plans[s] for s in streams if s in catalog_plans}
    inferred = [s for s in streams if s not in plans and source.convention in TYPED_CONVENTIONS]
    path = versions_path(config, source)
    stored = latest_versions(spark, path) if inferred else {}
    catalog = source_catalog(source)
    names = system_names(source.convention)
    for stream in inferred:
        observed = observed_types(rows_of(stream), names)
        previous = stored.get(stream)
        schema = evolve(previous.schema, observed) if previous else infer_schema(
            stream, observed, source.convention, source.max_identifier_length, source.max_table_nesting)
        plans[stream] = StreamPlan(stream_settings(source, catalog, stream), schema)
    for plan in plans.values():
        record_version(spark, path, plan.schema)
    return plans


def asset_stream_plans(config: LakenormConfig, source: SourceConfig) -> dict[str, StreamPlan]:
    """Catalog plans plus the inferred streams' newest stored schemas (for the Dagster asset graph)."""
    plans = stream_plans(source)
    path = versions_path(config, source)
    if source.convention not in TYPED_CONVENTIONS or ("://" not in path and not Path(path, "_delta_log").is_dir()):
        return plans
    spark = SparkSession.getActiveSession() or build_spark_session(config.spark)
    catalog = source_catalog(source)
    for stream, stored in latest_versions(spark, path).items():
        if stream not in plans and stored.schema.get("inferred"):
            plans[stream] = StreamPlan(stream_settings(source, catalog, stream), stored.schema)
    return plans


def write_typed_tables(spark: SparkSession, config: LakenormConfig, source: SourceConfig, names: SystemNames,
                       plan: StreamPlan, raw_rows: DataFrame, load_id: str, newest: bool,
                       nulled: dict[str, NulledCounts] | None = None) -> dict[str, int]:
    """Write the stream's typed tables for one load; returns rows written per table.

    `nulled`, when given, receives each written table's NULLED counts, observed during the write.

    `append` replaces this load's rows; `overwrite` replaces the whole table, and only when this load
    is the newest one of the stream; `append_dedup` merges the load into history and current tables.
    """
    if plan.settings.destination_sync_mode == "append_dedup":
        return write_dedup_tables(spark, config, source, names, plan, raw_rows, load_id)
    if plan.settings.destination_sync_mode == "overwrite" and not newest:
        return {}
    parsed = parse_records(raw_rows, names, plan.schema).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        frames = typed_tables(parsed, names, plan.schema, normalized_at=F.current_timestamp())
        observed = {table: observe_nulled(df, names) for table, df in frames.items()}
        frames = {table: df for table, (df, _) in observed.items()}
        paths = {table: config.table_path(source.name, table) for table in frames}
        if plan.settings.destination_sync_mode == "overwrite":
            writes = [lambda df=df, p=paths[t]: replace_all(df, p) for t, df in frames.items()]
        else:
            writes = [lambda df=df, p=paths[t]: replace_load(df, p, names.load_id, load_id) for t, df in frames.items()]
        run_concurrently(writes)
    finally:
        parsed.unpersist()
    if nulled is not None:
        nulled.update({table: nulled_counts(observation) for table, (_, observation) in observed.items()})
    return {table: last_commit_rows(spark, path) for table, path in paths.items()}
