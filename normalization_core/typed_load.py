"""Typed root and nested-child tables of one stream for one load (SPEC §4.2, §5.1, §6).

The raw rows of the load are parsed once; every table of the stream is projected from that parse.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from normalization_core.catalog import StreamSettings, source_catalog, stream_settings
from normalization_core.columns import SystemNames
from normalization_core.conventions import CONVENTIONS, system_names
from normalization_core.config import LakenormConfig, SourceConfig
from normalization_core.errors import ConfigError
from normalization_core.dedup_load import dedup_tables, write_dedup_tables
from normalization_core.io.delta import read_table, replace_all, replace_loads, rows_per_load, run_concurrently
from normalization_core.io.spark import build_spark_session
from normalization_core.io.versions import latest_versions, latest_versions_without_spark, record_versions
from normalization_core.schema import StreamSchema, schema_from_json_schema, schema_hash
from normalization_core.schema.contract import NO_DISCARDS, Discards, apply_contract, stream_contract
from normalization_core.schema.inference import Steering, evolve, infer_schema
from normalization_core.stream_collisions import disambiguate_tables
from normalization_core.schema.schema_file import with_stored_additions
from normalization_core.transform.not_null import check_not_null
from normalization_core.transform.discard import DiscardedCounts, discard, discarded_counts
from normalization_core.transform.counts import NulledCounts, load_counts, nulled_by_load, observe_loads
from normalization_core.transform.observed_kinds import observed_types
from normalization_core.transform.nesting import typed_tables
from normalization_core.transform.parse import RawRecords, parse_records

TYPED_CONVENTIONS = tuple(CONVENTIONS)


@dataclass(frozen=True)
class StreamPlan:
    """How one stream's typed tables are built and written."""

    settings: StreamSettings
    schema: StreamSchema
    """The stream's stored schema."""
    load_schema: StreamSchema | None = None
    """The schema the load's data needs, when its contract discards part of it (`discards`)."""
    discards: Discards = NO_DISCARDS

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
        if catalog[name].json_schema is None:  # settings without a schema (input hints): typed by inference
            continue
        settings = stream_settings(source, catalog, name)
        schema = schema_from_json_schema(name, settings.json_schema, convention=source.convention,
                                         max_identifier_length=source.max_identifier_length,
                                         max_table_nesting=source.max_table_nesting,
                                         namespace=settings.namespace or source.name)
        plans[name] = StreamPlan(settings, schema)
    plans = disambiguate_tables(source, plans)
    check_distinct_tables(source, plans)
    return plans


def check_distinct_tables(source: SourceConfig, plans: dict[str, StreamPlan]) -> None:
    """Refuse two streams that would write one table (their rows would be merged silently, SPEC §4);
    under `airbyte`, only what `disambiguate_tables` could not tell apart (an `_scd` table) is left."""
    names = system_names(source.convention)
    owner: dict[str, str] = {}
    for stream, plan in plans.items():
        tables = dedup_tables(plan, names) if plan.settings.destination_sync_mode == "append_dedup" else plan.tables
        for table in tables:
            other = owner.setdefault(table.lower(), stream)
            if other != stream:
                raise ConfigError(f"source {source.name!r}", f"streams {other!r} and {stream!r} both normalize "
                                                             f"to table {table!r}; rename one of them")


def versions_path(config: LakenormConfig, source: SourceConfig) -> str:
    return config.table_path(source.name, system_names(source.convention).versions_table)


def load_plans(spark: SparkSession, config: LakenormConfig, source: SourceConfig, streams: Iterable[str],
               rows_of: Callable[[str], DataFrame]) -> dict[str, StreamPlan]:
    """Plans of a load's streams, each schema stored as a version (SPEC §5.3): catalog streams from the
    catalog, the others inferred from `rows_of(stream)` (their raw rows) and evolved from their stored schema,
    as far as the stream's schema contract lets them (else `ContractViolation`, before any version is stored)."""
    catalog_plans = stream_plans(source)
    plans = {s: catalog_plans[s] for s in streams if s in catalog_plans}
    inferred = [s for s in streams if s not in plans and source.convention in TYPED_CONVENTIONS]
    path = versions_path(config, source)
    stored = latest_versions(spark, path) if inferred else {}
    catalog = source_catalog(source)
    names = system_names(source.convention)
    for stream in inferred:
        rows = rows_of(stream)
        check_not_null(source, stream, rows, names)
        observed = observed_types(rows, names, epochs="timestamp" in source.settings.detections)
        previous = starting_schema(source, stream, stored[stream].schema if stream in stored else None)
        steering = inference_steering(source, stream)
        schema = evolve(previous, observed, steering) if previous else infer_schema(
            stream, observed, source.convention, source.max_identifier_length, source.max_table_nesting, steering)
        kept, discards = apply_contract(source.name, stream, stream_contract(source, stream), previous, schema)
        settings = stream_settings(source, catalog, stream)
        if discards and settings.destination_sync_mode == "append_dedup":
            raise ConfigError(f"source {source.name!r}, stream {stream!r}", "schema_contract discard_row and "
                              "discard_value are not supported for append_dedup streams (use evolve or freeze)")
        plans[stream] = StreamPlan(settings, kept, schema if discards else None, discards)
    combined = disambiguate_tables(source, {**catalog_plans, **plans})
    plans = {stream: combined[stream] for stream in plans}
    check_distinct_tables(source, combined)
    record_versions(spark, path, [plan.schema for plan in plans.values() if plan.schema["tables"]])
    return plans


def starting_schema(source: SourceConfig, stream: str, stored: StreamSchema | None) -> StreamSchema | None:
    """What a load of an inferred stream evolves from: its stored schema, or its `schema_file`'s."""
    override = source.streams.get(stream)
    given = override.schema if override and override.schema else source.schemas.get(stream)
    return stored if given is None else with_stored_additions(given, stored)


def inference_steering(source: SourceConfig, stream: str) -> Steering:
    """The source's and the stream's settings that steer inference (SPEC §5.4)."""
    override = source.streams.get(stream)
    hints = override.columns if override else {}
    return Steering(detections=source.settings.detections, preferred_types=source.settings.preferred_types,
                    data_types={key: hint.data_type for key, hint in hints.items() if hint.data_type})


def asset_stream_plans(config: LakenormConfig, source: SourceConfig) -> dict[str, StreamPlan]:
    """Catalog plans plus the inferred streams' newest stored schemas (for the Dagster asset graph)."""
    plans = stream_plans(source)
    if source.convention not in TYPED_CONVENTIONS:
        return plans
    path = versions_path(config, source)
    if "://" in path and config.storage_options(path) is None:  # not s3a: read through Spark's file systems
        stored = latest_versions(SparkSession.getActiveSession() or build_spark_session(config.spark), path)
    else:
        stored = latest_versions_without_spark(path, config.storage_options(path))
    if not stored:
        return plans
    catalog = source_catalog(source)
    for stream, version in stored.items():
        if stream not in plans and version.schema.get("inferred"):
            plans[stream] = StreamPlan(stream_settings(source, catalog, stream), version.schema)
    plans = disambiguate_tables(source, plans)
    check_distinct_tables(source, plans)
    return plans


@dataclass(frozen=True)
class TypedCounts:
    """What one load put in each typed table of its stream."""

    rows: dict[str, int]
    nulled: dict[str, NulledCounts]
    discarded: dict[str, DiscardedCounts] = field(default_factory=dict)
    """Rows and values the stream's schema contract left out, per table (SPEC §5.4)."""


def write_typed_tables(spark: SparkSession, config: LakenormConfig, source: SourceConfig, names: SystemNames,
                       plan: StreamPlan, raw_rows: DataFrame | RawRecords, load_ids: Sequence[str]
                       ) -> dict[str, TypedCounts]:
    """Write the stream's typed tables for the loads of `raw_rows` (one commit per table); counts per load.

    `append` replaces these loads' rows; `overwrite` replaces the whole table (pass the newest load's rows
    only); `append_dedup` merges the loads into history and current tables.
    """
    if plan.settings.destination_sync_mode == "append_dedup":
        return _dedup_counts(spark, config, source, names, plan, raw_rows, load_ids)
    schema = plan.load_schema or plan.schema
    parsed = parse_records(raw_rows, names, schema)
    if not parsed.with_lines or plan.discards:  # (else read from the lines' cache)
        parsed = parsed.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        frames = typed_tables(parsed, names, schema, normalized_at=F.current_timestamp())
        discarding = discard(frames, schema, plan.discards, names, load_ids) if plan.discards else None
        frames = discarding.frames if discarding else frames
        observed = {table: observe_loads(df, names, load_ids) for table, df in frames.items()}
        paths = {table: config.table_path(source.name, table) for table in frames}
        if plan.settings.destination_sync_mode == "overwrite":
            writes = [partial(replace_all, df, paths[t]) for t, (df, _) in observed.items()]
        else:
            writes = [partial(replace_loads, df, paths[t], names.load_id, load_ids) for t, (df, _) in observed.items()]
        run_concurrently(writes)
        discarded = discarded_counts(discarding, names, load_ids) if discarding else {}
    finally:
        parsed.unpersist()
    counts = {table: load_counts(observation, load_ids) for table, (_, observation) in observed.items()}
    nulled = {table: {load_id: n for load_id, (_, n) in per_load.items()} for table, per_load in counts.items()}
    for table, per_load in nulled.items():
        if None in per_load.values():
            nulled[table] = nulled_by_load(read_table(spark, paths[table]), names, load_ids)
    return {load_id: TypedCounts({t: c[load_id][0] for t, c in counts.items()},
                                 {t: n[load_id] for t, n in nulled.items()},
                                 {t: d[load_id] for t, d in discarded.items()}) for load_id in load_ids}


def _dedup_counts(spark: SparkSession, config: LakenormConfig, source: SourceConfig, names: SystemNames,
                  plan: StreamPlan, raw_rows: DataFrame | RawRecords, load_ids: Sequence[str]
                  ) -> dict[str, TypedCounts]:
    """One load: rows its MERGEs changed per table; several: rows each load holds in each table afterwards."""
    changed = write_dedup_tables(spark, config, source, names, plan, raw_rows, load_ids)
    if len(load_ids) == 1:
        return {load_ids[0]: TypedCounts(changed, {})}
    held = {t: rows_per_load(spark, config.table_path(source.name, t), names.load_id, load_ids) for t in changed}
    return {load_id: TypedCounts({t: per_load[load_id] for t, per_load in held.items()}, {}) for load_id in load_ids}
