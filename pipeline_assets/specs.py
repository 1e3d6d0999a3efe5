"""A source's asset specs through the translator, with what the factories own set after it.

Tables are translated parents first, so each table's props carry its parent's translated key (`deps`) and a
prefix or a renaming keeps the graph. After the translator, a stream table gets the source's partitions
(`<source>_load_ids`), `skippable` (the op writes a stream's tables together and may leave some out), its
dependency on its parent table and, under `automation: on_upstream`, the source's automation condition unless the
translator set one (`automation.source_automation`); every table gets `lakenorm/source` and `lakenorm/table`
metadata. Keys must stay unique.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import dagster as dg

from normalization_core.api import SourceTables, StreamPlan, output_tables, stream_upstream
from pipeline_assets.automation import source_automation
from pipeline_assets.descriptions import system_descriptions
from pipeline_assets.partitions import load_ids_partitions
from pipeline_assets.translator import LakenormTableProps, LakenormTranslator, TableKeys, TableKind

DEFAULT_TRANSLATOR = LakenormTranslator()


@dataclass(frozen=True)
class SourceSpecs:
    """One source's stream tables as assets: raw by stream, typed by (stream, table)."""

    raw: dict[str, dg.AssetSpec]
    typed: dict[tuple[str, str], dg.AssetSpec]
    keys: TableKeys


def stream_asset_specs(tables: SourceTables, streams: list[str], plans: dict[str, StreamPlan],
                       translator: LakenormTranslator | None = None) -> SourceSpecs:
    """Raw tables of `streams`, then each planned stream's typed tables (parents first: `output_tables`)."""
    source, names, translator = tables.source, tables.names, translator or DEFAULT_TRANSLATOR
    partitions, keys = load_ids_partitions(source), {}

    def translate(stream: str, table: str, kind: TableKind, parent: str | None, deps: Iterable[dg.AssetKey]
                  ) -> dg.AssetSpec:
        props = LakenormTableProps(source.name, stream, table, kind, tables.path(table), source, plans.get(stream),
                                   parent, tuple(deps))
        spec = translator.get_asset_spec(props)
        spec = owned(spec, props, partitions_def=partitions, skippable=True, **source_automation(spec, source))
        keys[table] = spec.key
        return spec

    raw = {s: translate(s, tables.raw_table(s), "raw", None, map(dg.AssetKey, stream_upstream(source, s)))
           for s in streams}
    typed = {}
    for stream, plan in plans.items():
        history = plan.disposition.history_table(plan, names)
        for table in output_tables(plan, names):
            parent = plan.disposition.graph_parent(plan, names, table) or tables.raw_table(stream)
            kind = typed_kind(plan, table, history)
            typed[(stream, table)] = translate(stream, table, kind, parent, [keys[parent]])
    unique_keys((key, f"{source.name}.{table}") for table, key in keys.items())
    return SourceSpecs(raw, typed, TableKeys(source.name, keys))


def typed_kind(plan: StreamPlan, table: str, history: str | None) -> TableKind:
    if table == history:
        return "history"
    if table == plan.tables[0]:
        return "root" if history is None else "current"
    return "child"


def system_asset_specs(tables: SourceTables, translator: LakenormTranslator | None = None) -> list[dg.AssetSpec]:
    """The source's observed system tables (`system_descriptions`)."""
    source, translator = tables.source, translator or DEFAULT_TRANSLATOR
    specs = []
    for table in system_descriptions(tables.names):
        props = LakenormTableProps(source.name, None, table, "system", tables.path(table), source)
        specs.append(owned(translator.get_asset_spec(props), props))
    return specs


def owned(spec: dg.AssetSpec, props: LakenormTableProps, **attributes) -> dg.AssetSpec:
    """What the factories need whatever the translator said: the parent table's dep (a typed table), the
    `lakenorm/source` / `lakenorm/table` metadata by which a run finds its tables' assets, and `attributes`
    (one new spec: each costs Dagster's validation, thousands of times in a large code location)."""
    missing = [key for key in (props.deps if props.parent else ()) if key not in {d.asset_key for d in spec.deps}]
    metadata = {**spec.metadata, "lakenorm/source": props.source, "lakenorm/table": props.table}
    return spec.replace_attributes(deps=[*spec.deps, *missing], metadata=metadata, **attributes)


def unique_keys(tables: Iterable[tuple[dg.AssetKey, str]]) -> None:
    """(key, `source.table`) pairs: two tables must not share an asset key (a translator that merges them is
    refused before Dagster's own, less telling, error)."""
    seen: dict[dg.AssetKey, str] = {}
    for key, table in tables:
        if key in seen:
            raise dg.DagsterInvalidDefinitionError(f"tables {seen[key]} and {table} were given the same asset key "
                                                   f"{key.to_user_string()!r} by the translator")
        seen[key] = table


def spec_tables(specs: Iterable[dg.AssetSpec]) -> Iterator[tuple[dg.AssetKey, str]]:
    """(key, `source.table`) of lakenorm's specs, by their `lakenorm/source` and `lakenorm/table` metadata."""
    for spec in specs:
        yield spec.key, f"{spec.metadata['lakenorm/source']}.{spec.metadata['lakenorm/table']}"
