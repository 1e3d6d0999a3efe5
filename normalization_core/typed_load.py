"""Typed root and nested-child tables of one stream for one load (SPEC §4.2, §5.1, §6).

The raw rows of the load are parsed once; every table of the stream is projected from that parse.
"""
from __future__ import annotations

from dataclasses import dataclass

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from normalization_core.catalog import StreamSettings, source_catalog, stream_settings
from normalization_core.columns import SystemNames
from normalization_core.config import LakenormConfig, SourceConfig
from normalization_core.dedup_load import write_dedup_tables
from normalization_core.io.delta import last_commit_rows, replace_all, replace_load, run_concurrently
from normalization_core.schema import StreamSchema, schema_from_json_schema, schema_hash
from normalization_core.transform.nesting import parse_records, typed_tables

TYPED_CONVENTIONS = ("native", "dlt")


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
    """Plans for the streams typed from the source's catalog (inferred streams stay raw for now)."""
    if source.convention not in TYPED_CONVENTIONS:
        return {}
    catalog = source_catalog(source)
    plans = {}
    for name in catalog:
        settings = stream_settings(source, catalog, name)
        schema = schema_from_json_schema(name, settings.json_schema, convention=source.convention,
                                         max_identifier_length=source.max_identifier_length,
                                         max_table_nesting=source.max_table_nesting)
        plans[name] = StreamPlan(settings, schema)
    return plans


def write_typed_tables(spark: SparkSession, config: LakenormConfig, source: SourceConfig, names: SystemNames,
                       plan: StreamPlan, raw_rows: DataFrame, load_id: str, newest: bool) -> dict[str, int]:
    """Write the stream's typed tables for one load; returns rows written per table.

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
        paths = {table: config.table_path(source.name, table) for table in frames}
        if plan.settings.destination_sync_mode == "overwrite":
            writes = [lambda df=df, p=paths[t]: replace_all(df, p) for t, df in frames.items()]
        else:
            writes = [lambda df=df, p=paths[t]: replace_load(df, p, names.load_id, load_id) for t, df in frames.items()]
        run_concurrently(writes)
    finally:
        parsed.unpersist()
    return {table: last_commit_rows(spark, path) for table, path in paths.items()}
