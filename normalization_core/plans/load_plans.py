"""The plans of one load's streams (SPEC §5.3, §5.4): catalog streams from the catalog, the others inferred
from the load's rows, evolved from their stored schema and stored as a new version when they changed."""
from __future__ import annotations

from collections.abc import Callable, Iterable

from pyspark.sql import DataFrame, SparkSession

from normalization_core.checks.not_null import check_not_null
from normalization_core.configuration.catalog import StreamSettings, configured_settings
from normalization_core.configuration.config import SourceConfig, stream_contract
from normalization_core.inputs.landing import source_catalog
from normalization_core.io.versions import latest_versions_without_spark, record_versions
from normalization_core.plans.source_tables import SourceTables
from normalization_core.plans.stream_plans import TYPED_CONVENTIONS, StreamPlan, distinct_plans, schema_file_schemas
from normalization_core.schema import StreamSchema
from normalization_core.schema.contract import apply_contract
from normalization_core.schema.inference import Steering, evolve, infer_schema
from normalization_core.schema.schema_file import with_stored_additions
from normalization_core.transform.observed_kinds import observed_types


def load_plans(spark: SparkSession, source_tables: SourceTables, catalog_plans: dict[str, StreamPlan],
               streams: Iterable[str], rows_of: Callable[[str], DataFrame]) -> dict[str, StreamPlan]:
    """Plans of a load's streams, each schema stored as a version (SPEC §5.3): catalog streams from the
    catalog (`catalog_plans`: the source's `stream_plans`, made once per pass), the others inferred from
    `rows_of(stream)` (their raw rows) and evolved from their stored schema, as far as the stream's schema contract lets them (else `ContractViolation`, before any version is stored)."""
    source = source_tables.source
    plans = {s: catalog_plans[s] for s in streams if s in catalog_plans}
    inferred = [s for s in streams if s not in plans and source.convention in TYPED_CONVENTIONS]
    versions = source_tables.versions_path
    stored = latest_versions_without_spark(versions, source_tables.storage_options(versions)) if inferred else {}
    catalog = source_catalog(source)
    for stream in inferred:
        previous = starting_schema(source, stream, stored[stream].schema if stream in stored else None)
        plans[stream] = inferred_plan(source_tables, configured_settings(source, catalog, stream), previous,
                                      rows_of(stream))
    combined = distinct_plans(source, {**catalog_plans, **plans})
    plans = {stream: combined[stream] for stream in plans}
    record_versions(spark, versions, [p.schema for p in plans.values() if p.schema["tables"]],
                    source_tables.storage_options(versions))
    return plans


def inferred_plan(source_tables: SourceTables, settings: StreamSettings, previous: StreamSchema | None,
                  rows: DataFrame) -> StreamPlan:
    """The plan of an inferred stream for `rows` (its raw rows): `previous` evolved by what they hold, else
    a schema inferred from them, kept to what the stream's schema contract allows."""
    source, stream, names = source_tables.source, settings.name, source_tables.names
    check_not_null(source, stream, rows, names)
    observed = observed_types(rows, names, epochs="timestamp" in source.settings.detections)
    steering = inference_steering(source, stream)
    schema = evolve(previous, observed, steering) if previous else infer_schema(
        stream, observed, source.convention, source.max_identifier_length, source.max_table_nesting, steering)
    kept, discards = apply_contract(source.name, stream, stream_contract(source, stream), previous, schema)
    return StreamPlan(settings, kept, schema if discards else None, discards)


def starting_schema(source: SourceConfig, stream: str, stored: StreamSchema | None) -> StreamSchema | None:
    """What a load of an inferred stream evolves from: its stored schema, or its `schema_file`'s."""
    given = schema_file_schemas(source).get(stream)
    return stored if given is None else with_stored_additions(given, stored)


def inference_steering(source: SourceConfig, stream: str) -> Steering:
    """The source's and the stream's settings that steer inference (SPEC §5.4)."""
    override = source.streams.get(stream)
    hints = override.columns if override else {}
    return Steering(detections=source.settings.detections, preferred_types=source.settings.preferred_types,
                    data_types={key: hint.data_type for key, hint in hints.items() if hint.data_type})
