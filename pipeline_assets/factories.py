"""Factories: one source's configuration -> its partitions, raw assets and job."""
from collections.abc import Iterator
from dataclasses import replace

import dagster as dg
from pyspark.sql import SparkSession

from normalization_core.api import (
    LakenormConfig,
    LakenormError,
    LoadResult,
    SourceConfig,
    SourceTables,
    StreamPlan,
    catalog_table_name,
    find_table,
    known_streams,
    load_table_versions,
    normalize_source,
    raw_schema,
    registered_load_ids,
    registered_source_results,
    source_input_bytes,
    stream_plans,
    stream_upstream,
    system_names,
)
from pipeline_assets.asset_checks import check_events, check_results, check_specs
from pipeline_assets.automation import build_automation_sensor, source_automation_condition
from pipeline_assets.descriptions import history_description, raw_description, stream_tags, typed_description
from pipeline_assets.metadata import (
    column_json_paths,
    column_lineage,
    column_schema,
    document_columns,
    raw_load_counts,
    spark_columns,
    table_state,
    typed_load_counts,
)
from pipeline_assets.partitions import load_ids_partitions
from pipeline_assets.resources import SparkSessionResource
from pipeline_assets.schedules import build_schedules, maintained_tables
from pipeline_assets.sensors import build_landing_sensor
from pipeline_assets.system_tables import observe_job, rebuild_job, system_table_assets


def raw_asset_specs(tables: SourceTables, streams: list[str],
                    plans: dict[str, StreamPlan] | None = None) -> dict[str, dg.AssetSpec]:
    source = tables.source
    columns = column_schema(spark_columns(raw_schema(tables.names)))
    specs = {}
    for stream in streams:
        table = tables.raw_table(stream)
        specs[stream] = dg.AssetSpec(
            [source.name, table], deps=[dg.AssetKey(list(k)) for k in stream_upstream(source, stream)],
            skippable=True, group_name=source.name, kinds={"spark", "delta"},
            automation_condition=source_automation_condition(source),
            description=raw_description(source, stream, (plans or {}).get(stream)),
            tags=stream_tags(source, (plans or {}).get(stream), "raw"),
            metadata={"dagster/table_name": catalog_table_name(source, table),
                      "dagster/uri": tables.path(table), "dagster/column_schema": columns, "stream": stream},
        )
    return specs


def typed_asset_specs(source: SourceConfig, plans: dict[str, StreamPlan], raw: dict[str, dg.AssetSpec]
                      ) -> dict[tuple[str, str], dg.AssetSpec]:
    """Per stream its typed tables, each depending on its graph parent (`Disposition.graph_parent`): the root on
    raw, a child on its parent; `append_dedup`: history (on raw), current and the root's child tables (on history),
    deeper children (on their parent)."""
    names = system_names(source.convention)
    specs = {}
    for stream, plan in plans.items():
        history = plan.disposition.history_table(plan, names)
        if history is not None:
            specs[(stream, history)] = _history_spec(source, plan, history, raw[stream])
        for table in plan.schema["tables"]:
            parent = table.get("parent")
            graph_parent = plan.disposition.graph_parent(plan, names, table["name"])
            upstream = raw[stream].key if graph_parent is None else dg.AssetKey([source.name, graph_parent])
            columns = column_schema(document_columns(table))
            specs[(stream, table["name"])] = dg.AssetSpec(
                [source.name, table["name"]], deps=[upstream], skippable=True, group_name=source.name,
                kinds={"spark", "delta"}, automation_condition=source_automation_condition(source),
                description=typed_description(source, plan, table["name"], upstream.path[-1]),
                tags=stream_tags(source, plan, "child" if parent else "root"),
                metadata={"dagster/table_name": catalog_table_name(source, table["name"]),
                          "dagster/column_schema": columns,
                          "stream": stream, "write_disposition": plan.disposition.name,
                          **name_collisions(plan, table["name"])},
            )
    return specs


def name_collisions(plan: StreamPlan, table: str) -> dict:
    """`name_collisions`: the table-name collisions (SPEC §4) that gave `table` its name, if any."""
    found = [dict(c["resolved"]) for c in plan.schema["collisions"]
             if c["table"] is None and table in c["resolved"].values()]
    return {"name_collisions": found} if found else {}


def _history_spec(source: SourceConfig, plan: StreamPlan, table: str, raw: dg.AssetSpec) -> dg.AssetSpec:
    root = plan.schema["tables"][0]
    columns = column_schema(document_columns(root))
    return dg.AssetSpec(
        [source.name, table], deps=[raw.key], skippable=True, group_name=source.name, kinds={"spark", "delta"},
        automation_condition=source_automation_condition(source),
        description=history_description(source, plan), tags=stream_tags(source, plan, "history"),
        metadata={"dagster/table_name": catalog_table_name(source, table), "dagster/column_schema": columns,
                  "stream": plan.settings.name, "write_disposition": plan.disposition.name},
    )


def build_source_assets(config: LakenormConfig, source: SourceConfig, streams: list[str],
                        known_plans: dict[str, StreamPlan] | None = None) -> dg.AssetsDefinition:
    """One op reads a package once and writes every table of its streams: raw, typed root, children.
    `known_plans`: the source's plans with its stored ones (`stream_plans`), when the caller has read them."""
    tables = SourceTables(config, source)
    every_plan = stream_plans(source, stored_in=tables) if known_plans is None else known_plans
    plans = {s: p for s, p in every_plan.items() if s in streams}
    raw = raw_asset_specs(tables, streams, plans)
    typed = typed_asset_specs(source, plans, raw)

    @dg.multi_asset(
        name=f"{source.name}_normalize_loads", specs=[*raw.values(), *typed.values()],
        check_specs=check_specs(tables, plans),
        partitions_def=load_ids_partitions(source), backfill_policy=load_ids_backfill_policy(source),
        can_subset=True, description=f"Normalize load packages of source {source.name!r} into Delta tables.",
    )
    def normalize(context: dg.AssetExecutionContext, spark: SparkSessionResource
                  ) -> Iterator[dg.AssetMaterialization | dg.AssetCheckResult | dg.AssetCheckEvaluation | dg.Output]:
        stream_of = {spec.key: s for s, spec in raw.items()} | {spec.key: s for (s, _), spec in typed.items()}
        selected = sorted({stream_of[k] for k in context.selected_asset_keys})
        checked = sorted({stream_of[k.asset_key] for k in context.selected_asset_check_keys} - set(selected))
        loads, failed = run_load_ids(context), {}
        spark.start(source_input_bytes(tables, loads) if loads and selected else None)
        with spark.lost_engine_errors():
            results = run_streams(context, spark.spark, tables, loads, streams, selected, checked, failed)
        versions = load_table_versions(spark.spark, tables, [r.load_id for r in results]) if selected else {}
        for stream, spec in raw.items():
            per_load = raw_load_counts(results, stream)
            if per_load is not None and spec.key in context.selected_asset_keys:
                path = tables.raw_path(stream)
                state = table_state(spark.spark, path, tables.storage_options(path))
                yield from materialize_per_load(spec.key, per_load, state, versions)
        for (stream, table), spec in typed.items():
            per_load = typed_load_counts(results, stream, table)
            if per_load is not None and spec.key in context.selected_asset_keys:
                state = typed_table_metadata(spark.spark, tables, plans[stream], table)
                yield from materialize_per_load(spec.key, per_load, state, versions)
        yield from check_events(context, check_results(spark.spark, tables, plans, results))
        if failed:
            raise failed_loads_error(failed)

    return normalize


def load_ids_backfill_policy(source: SourceConfig) -> dg.BackfillPolicy:
    """A backfill's (and Declarative Automation's) runs each cover at most `max_loads_per_run` neighbouring
    partitions, normalized in one pass."""
    return dg.BackfillPolicy.multi_run(max_partitions_per_run=source.max_loads_per_run)


def failed_loads_error(failed: dict[str, LakenormError]) -> LakenormError:
    """The run fails once the other loads are materialized: with the error of its one failed load, or one naming
    each failed load and its error."""
    if len(failed) == 1:
        return next(iter(failed.values()))
    return LakenormError(f"{len(failed)} loads failed, the others were normalized: "
                         + "; ".join(f"{load_id}: {err}" for load_id, err in failed.items()))


def run_streams(context: dg.AssetExecutionContext, spark: SparkSession, tables: SourceTables,
                run_loads: list[str] | None, streams: list[str], selected: list[str], checked: list[str],
                failed: dict[str, LakenormError]) -> list[LoadResult]:
    """Normalize the run's loads (`run_load_ids`) for the `selected` streams (a stream is the unit: selecting any
    of its tables writes all of them; other streams are neither read nor written); `checked` streams (checks
    selected without their assets) are only read back from the registry, for their checks. A run without
    partitions (table-wide checks alone) checks every registered load. A load that fails lands nothing and goes
    into `failed` (load ID: error); the others go on."""
    source = tables.source
    loads = registered_load_ids(spark, tables) if run_loads is None else run_loads
    results = []
    if selected:
        context.log.info(f"normalizing loads {', '.join(loads)} of source {source.name}, streams {', '.join(selected)}")
        results = normalize_source(spark, tables, loads, on_error=failed.__setitem__,
                                   streams=None if selected == sorted(streams) else selected)
    if checked:
        context.log.info(f"checking loads {', '.join(loads)} of source {source.name}, streams {', '.join(checked)}")
        results = merge_results(results, registered_source_results(spark, tables, loads, checked))
    return results


def run_load_ids(context: dg.AssetExecutionContext) -> list[str] | None:
    """The run's partitions; None in a run of table-wide checks alone (no partitioned step, even if tagged)."""
    if not (context.has_partition_key or context.has_partition_key_range):
        return None
    try:
        keys = list(context.partition_keys)
    except dg.DagsterInvariantViolationError:
        return None
    if not keys:  # Dagster runs a range whose start was added after its end, over no partition
        span = context.partition_key_range
        raise LakenormError(f"the run's partition range {span.start} to {span.end} holds no partition (its start "
                            "was added after its end): run these load IDs from the partitions page")
    return keys


def merge_results(first: list[LoadResult], second: list[LoadResult]) -> list[LoadResult]:
    """One result per load: the streams of both (each stream is in one of them only)."""
    if not first:
        return second
    other = {r.load_id: r for r in second}
    return [replace(r, streams={**other[r.load_id].streams, **r.streams}) if r.load_id in other else r
            for r in first]


def typed_table_metadata(spark: SparkSession, tables: SourceTables, plan: StreamPlan, table: str) -> dict:
    source, names = tables.source, tables.names
    history = plan.disposition.history_table(plan, names)
    doc = find_table(plan.schema, plan.tables[0] if table == history else table)  # history: root's columns
    parent = plan.disposition.graph_parent(plan, names, table)
    raw_key = dg.AssetKey([source.name, tables.raw_table(plan.settings.name)])
    path = tables.path(table)
    return {**table_state(spark, path, tables.storage_options(path), column_json_paths(plan.schema, doc)),
            "dagster/column_lineage": column_lineage(plan.schema, doc, names, raw_key, source.name, parent),
            **name_collisions(plan, doc["name"])}


def materialize_per_load(key: dg.AssetKey, per_load: dict[str, dict], table_wide: dict,
                         versions: dict[str, dict[str, int]] | None = None) -> Iterator[dg.AssetMaterialization]:
    """One materialization per load the run normalized, each with that load's own counts, plus what describes the
    whole table after the run (row count, schema, lineage). Each is yielded for its partition (the table assets are
    skippable: no output), so a load of the run that failed gets none and its partition shows the failure.
    `versions`: per load, the Delta version its commit gave each table (`delta_version` of the partition)."""
    for load_id, counts in per_load.items():
        version = (versions or {}).get(load_id, {}).get(key.path[-1])
        counts = counts if version is None else {**counts, "delta_version": version}
        yield dg.AssetMaterialization(asset_key=key, partition=load_id, metadata={**table_wide, **counts})


def source_job_name(source: SourceConfig) -> str:
    return f"{source.name}_normalize"


def build_source_definitions(config: LakenormConfig, source: SourceConfig) -> dg.Definitions:
    """Everything of one source: raw assets, the job that normalizes a load and the landing sensor."""
    streams = known_streams(config, source)
    if not streams:
        return dg.Definitions(sensors=[build_landing_sensor(config, source, job=None)])
    tables = SourceTables(config, source)
    plans = stream_plans(source, stored_in=tables)
    assets = build_source_assets(config, source, streams, plans)
    job = dg.define_asset_job(source_job_name(source), selection=dg.AssetSelection.assets(*assets.keys),
                              description=f"Normalize load packages of source {source.name!r}.")
    automated = source.automation == "on_upstream"  # the landing sensor then registers loads, automation runs them
    jobs, schedules = build_schedules(tables, maintained_tables(tables, streams, plans), None if automated else job)
    rebuild = rebuild_job(tables, [s for s in streams if s in plans])
    system = system_table_assets(config, source)
    sensors = [build_landing_sensor(config, source, job=None if automated else job)]
    if automated:
        sensors.append(build_automation_sensor(source, assets.keys))
    return dg.Definitions(assets=[assets, *system], jobs=[job, rebuild, observe_job(source, system), *jobs],
                          schedules=schedules, sensors=sensors)
