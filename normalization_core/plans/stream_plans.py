"""A stream's plan: its settings and schema, hence the tables it writes (SPEC §4, §6, §7).

Every layer that needs "the tables of a stream" (writers, rebuild, checks, maintenance, the asset graph)
asks `output_tables`. Plans of catalog streams come from the catalog alone (`stream_plans`); the asset
graph adds inferred streams' newest stored schemas, read without a JVM, and the streams' `schema_file`s
(`stream_plans(..., stored_in=)`).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

from normalization_core.columns import SystemNames
from normalization_core.configuration.catalog import configured_settings
from normalization_core.configuration.config import SourceConfig
from normalization_core.inputs.landing import source_catalog
from normalization_core.schema.stream_settings import StreamSettings
from normalization_core.dispositions import Disposition, disposition
from normalization_core.errors import ConfigError
from normalization_core.io.versions import StoredVersion, latest_versions_without_spark
from normalization_core.naming.conventions import CONVENTIONS
from normalization_core.plans.source_tables import SourceTables
from normalization_core.plans.table_names import disambiguate_tables
from normalization_core.schema import StreamSchema, schema_from_json_schema, schema_hash
from normalization_core.schema.contract import NO_DISCARDS, Discards

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
    disposition: Disposition = field(init=False, repr=False, compare=False)
    """How its tables are written: the plug-in its settings' `destination_sync_mode` names (parsed here, once)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "disposition", disposition(self.settings.destination_sync_mode))

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



def history_table(plan: StreamPlan, names: SystemNames) -> str | None:
    """The stream's history table (`<root>_scd` under `append_dedup`); None for other dispositions."""
    return plan.disposition.history_table(plan, names)


def output_tables(plan: StreamPlan, names: SystemNames) -> list[str]:
    """Every typed table the stream writes: the history first (`append_dedup`), then the root (its current
    table under `append_dedup`), then the child tables, parents before children."""
    return plan.disposition.output_tables(plan, names)


def key_ordered_tables(plan: StreamPlan, names: SystemNames) -> dict[str, tuple[str, ...]]:
    """The stream's tables kept in key order, with their key columns (`append_dedup`: history and current)."""
    return plan.disposition.key_ordered_tables(plan, names)


def stream_plans(source: SourceConfig, stored_in: SourceTables | None = None) -> dict[str, StreamPlan]:
    """Plans for the streams typed from the source's catalog (inferred streams of a load: `load_plans`);
    with `stored_in` (the Dagster asset graph), also the inferred streams' newest stored schemas there.

    The stored schemas are read with delta-rs, so loading the code location starts no JVM (SPEC §8); a store
    delta-rs cannot open leaves the inferred streams out of the graph until it can, with a warning."""
    if source.convention not in TYPED_CONVENTIONS:
        return {}
    plans = _catalog_plans(source)
    return plans if stored_in is None else with_stored_plans(stored_in, plans)


def _catalog_plans(source: SourceConfig) -> dict[str, StreamPlan]:
    """Plans of the catalog's streams that come with a JSON Schema; those of a catalog file are made again only
    when the source's settings or the file changed (typing the JSON Schemas is most of what building the asset
    graph of many streams costs besides Dagster, which builds it twice when it loads a code location)."""
    if source.catalog is None:  # the input's own catalog, in the landing
        return _plans_of_catalog(source)
    stat = source.catalog.stat()
    key = (source, stat.st_mtime_ns, stat.st_size)
    last = _LAST_CATALOG_PLANS.get(source.name)
    if last is None or last[0] != key:
        last = _LAST_CATALOG_PLANS[source.name] = key, _plans_of_catalog(source)
    return dict(last[1])


_LAST_CATALOG_PLANS: dict[str, tuple[tuple, dict[str, StreamPlan]]] = {}
"""Per source name: what its catalog plans were last made from, and them (frozen: shared by the callers)."""


def _plans_of_catalog(source: SourceConfig) -> dict[str, StreamPlan]:
    catalog = source_catalog(source)
    plans = {}
    for name in catalog:
        if catalog[name].json_schema is None:  # settings without a schema (input hints): typed by inference
            continue
        settings = configured_settings(source, catalog, name)
        schema = schema_from_json_schema(name, settings.json_schema, convention=source.convention,
                                         max_identifier_length=source.max_identifier_length,
                                         max_table_nesting=source.max_table_nesting,
                                         namespace=settings.namespace or source.name)
        plans[name] = StreamPlan(settings, schema)
    return distinct_plans(source, plans)


def distinct_plans(source: SourceConfig, plans: dict[str, StreamPlan]) -> dict[str, StreamPlan]:
    """The plans with clashing tables disambiguated (airbyte), refusing what still clashes."""
    plans = disambiguate_tables(source, plans)
    check_distinct_tables(source, plans)
    return plans


def check_distinct_tables(source: SourceConfig, plans: dict[str, StreamPlan]) -> None:
    """Refuse two streams that would write one table (their rows would be merged silently, SPEC §4);
    under `airbyte`, only what `disambiguate_tables` could not tell apart (an `_scd` table) is left."""
    names = source.naming.names
    owner: dict[str, str] = {}
    for stream, plan in plans.items():
        for table in output_tables(plan, names):
            other = owner.setdefault(table.lower(), stream)
            if other != stream:
                raise ConfigError(f"source {source.name!r}", f"streams {other!r} and {stream!r} both normalize "
                                                             f"to table {table!r}; rename one of them")


def with_stored_plans(source_tables: SourceTables, plans: dict[str, StreamPlan]) -> dict[str, StreamPlan]:
    """`plans` (the catalog's) plus the inferred streams' newest stored schemas, else their `schema_file`'s
    (streams not loaded yet show their schema file's tables)."""
    source, plans = source_tables.source, dict(plans)
    stored = {s: v.schema for s, v in _stored_versions(source_tables).items() if v.schema.get("inferred")}
    inferred = {**schema_file_schemas(source), **stored}
    if not inferred:
        return plans
    catalog = source_catalog(source)
    for stream, schema in inferred.items():
        if stream not in plans:
            plans[stream] = StreamPlan(configured_settings(source, catalog, stream), schema)
    return distinct_plans(source, plans)


def schema_file_schemas(source: SourceConfig) -> dict[str, StreamSchema]:
    """The streams' schemas given by `schema_file`s (SPEC §5.4): a stream's own file wins over the source's."""
    return {**source.schemas, **{s: o.schema for s, o in source.streams.items() if o.schema is not None}}


def _stored_versions(source_tables: SourceTables) -> dict[str, StoredVersion]:
    path = source_tables.versions_path
    try:
        return latest_versions_without_spark(path, source_tables.storage_options(path))
    except OSError as err:  # delta-rs: an object store without credentials it can find
        first = (str(err).strip().splitlines() or [""])[0]
        warnings.warn(f"stored schemas of source {source_tables.source.name!r} not read from {path}: {first}")
        return {}
