"""How each table lakenorm writes becomes a Dagster asset: `LakenormTranslator.get_asset_spec(props)`.

As in Dagster's dlt, Sling and dbt integrations, a subclass maps lakenorm's tables onto a project's own keys,
groups, owners, tags, automation and extra deps (`spec.replace_attributes` / `merge_attributes`). The factories
then set what they own (the partitions, `skippable`, a typed table's dependency on the table it is built from,
`lakenorm/source` and `lakenorm/table` metadata), and everything built from the configuration (checks, jobs,
run metadata, the rebuild job) finds a table's asset by the key the translator gave it (`TableKeys`).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Literal

import dagster as dg

from normalization_core.api import (
    SourceConfig,
    StreamPlan,
    catalog_table_name,
    find_table,
    raw_schema,
    system_names,
)
from pipeline_assets.descriptions import (
    history_description,
    raw_description,
    stream_tags,
    system_descriptions,
    typed_description,
)
from pipeline_assets.metadata import column_schema, document_columns, spark_columns

TableKind = Literal["raw", "root", "current", "history", "child", "system"]
"""raw: every landed line of a stream; root: the typed root table of an `append` / `overwrite` stream; history:
an `append_dedup` stream's SCD2 table; current: its current table (the root); child: a nested list's table;
system: the registry and schema versions tables (observed, not materialized)."""

LAYERS: dict[str, str] = {"raw": "raw", "root": "root", "current": "root", "history": "history", "child": "child"}
"""The `lakenorm/layer` tag of each kind of stream table."""


@dataclass(frozen=True)
class LakenormTableProps:
    """One table lakenorm writes, as `LakenormTranslator.get_asset_spec` sees it."""

    source: str
    stream: str | None
    """None for the source's system tables."""
    table: str
    kind: TableKind
    location: str
    """The Delta table's path or URI: `<warehouse>/<source>/<table>`."""
    source_config: SourceConfig
    stream_plan: StreamPlan | None = field(default=None, repr=False)
    """The stream's settings (primary key, cursor, disposition) and schema; None for system tables and for the
    raw table of a stream typed by inference before its first load."""
    parent: str | None = None
    """The table this one is built from (raw, history or parent table); None for raw and system tables."""
    deps: tuple[dg.AssetKey, ...] = ()
    """The asset keys it depends on: its parent table's (as translated), or, for a raw table, the configured
    `upstream` of its stream or source."""


class LakenormTranslator:
    """Makes each table's `AssetSpec`. The default: key `[source, table]`, group = source, kinds spark and delta,
    lakenorm's descriptions, tags (`lakenorm/layer`, `lakenorm/convention`, `lakenorm/disposition`) and metadata
    (table name, schema), deps `props.deps`."""

    def get_asset_spec(self, props: LakenormTableProps) -> dg.AssetSpec:
        return dg.AssetSpec(**default_spec_attributes(props))

    def __eq__(self, other: object) -> bool:
        """Translators of one class with equal attributes translate alike (a code location loaded again with
        an equal translator and configuration reuses its Definitions)."""
        return type(self) is type(other) and getattr(self, "__dict__", None) == getattr(other, "__dict__", None)

    def __hash__(self) -> int:
        return hash(type(self))


@dataclass(frozen=True)
class TableKeys:
    """Each table's asset key as its source's built specs hold it; a table they do not hold (one a rebuild found
    since the code location loaded) has the default key `[source, table]`."""

    source: str
    keys: Mapping[str, dg.AssetKey] = field(default_factory=dict)

    def __call__(self, table: str) -> dg.AssetKey:
        return self.keys.get(table) or dg.AssetKey([self.source, table])


def _common(props: LakenormTableProps) -> dict:
    return {"key": [props.source, props.table], "group_name": props.source, "deps": props.deps,
            "kinds": {"spark", "delta"}, "skippable": True}


def default_spec_attributes(props: LakenormTableProps) -> dict:
    """The default spec of a table as `AssetSpec` arguments (to change some before the spec is made: each spec
    costs Dagster's validation, thousands of times in a large code location)."""
    return DEFAULT_SPECS[props.kind](props)


def _raw_spec(props: LakenormTableProps) -> dict:
    source, plan, stream = props.source_config, props.stream_plan, props.stream or ""
    return dict(
        **_common(props), description=raw_description(source, stream, plan), tags=stream_tags(source, plan, "raw"),
        metadata={"dagster/table_name": catalog_table_name(source, props.table), "dagster/uri": props.location,
                  "dagster/column_schema": _raw_columns(source.convention), "stream": stream})


@cache
def _raw_columns(convention: str) -> dg.TableSchema:
    return column_schema(spark_columns(raw_schema(system_names(convention))))


def _typed_spec(props: LakenormTableProps) -> dict:
    """A root, current or child table: its document's columns; a history table: its root's."""
    source, plan = props.source_config, props.stream_plan
    assert plan is not None  # typed tables come from a plan
    if props.kind == "history":
        doc, description = plan.schema["tables"][0], history_description(source, plan)
    else:
        doc = find_table(plan.schema, props.table)
        description = typed_description(source, plan, props.table, props.parent or "")
    collisions = {} if props.kind == "history" else name_collisions(plan, props.table)
    return dict(
        **_common(props), description=description, tags=stream_tags(source, plan, LAYERS[props.kind]),
        metadata={"dagster/table_name": catalog_table_name(source, props.table),
                  "dagster/column_schema": column_schema(document_columns(doc)),
                  "stream": plan.settings.name, "write_disposition": plan.disposition.name, **collisions})


def _system_spec(props: LakenormTableProps) -> dict:
    source = props.source_config
    return dict(
        key=[props.source, props.table], group_name=props.source, deps=props.deps, kinds={"delta"},
        description=system_descriptions(source.naming.names).get(props.table),
        metadata={"dagster/table_name": catalog_table_name(source, props.table), "dagster/uri": props.location})


def name_collisions(plan: StreamPlan, table: str) -> dict:
    """`name_collisions`: the table-name collisions (SPEC §4) that gave `table` its name; `column_collisions`:
    those of its columns (keys that normalized to one name, or to a system column's), each as the names its
    keys got; only those there are."""
    collisions = plan.schema["collisions"]
    found = {"name_collisions": [dict(c["resolved"]) for c in collisions
                                 if c["table"] is None and table in c["resolved"].values()],
             "column_collisions": [dict(c["resolved"]) for c in collisions if c["table"] == table]}
    return {key: value for key, value in found.items() if value}


DEFAULT_SPECS: dict[str, Callable[[LakenormTableProps], dict]] = {
    "raw": _raw_spec, "root": _typed_spec, "current": _typed_spec, "history": _typed_spec, "child": _typed_spec,
    "system": _system_spec}
