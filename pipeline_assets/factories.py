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
    find_table,
    keeps_file_ledger,
    known_streams,
    load_table_versions,
    normalize_source,
    registered_load_ids,
    registered_source_results,
    source_input_bytes,
    stream_plans,
)
from pipeline_assets.asset_checks import check_events, check_results, check_specs
from pipeline_assets.automation import build_automation_sensor
from pipeline_assets.file_ledger import file_ledger_job
from pipeline_assets.metadata import column_json_paths, column_lineage, raw_load_counts, table_state, typed_load_counts
from pipeline_assets.partitions import load_ids_partitions
from pipeline_assets.resources import SparkSessionResource
from pipeline_assets.schedules import build_schedules, maintained_tables
from pipeline_assets.sensors import build_landing_sensor
from pipeline_assets.specs import stream_asset_specs, system_asset_specs
from pipeline_assets.system_tables import observe_job, rebuild_job, system_table_assets
from pipeline_assets.translator import LakenormTranslator, TableKeys, name_collisions


def build_source_assets(config: LakenormConfig, source: SourceConfig, streams: list[str],
                        known_plans: dict[str, StreamPlan] | None = None,
                        translator: LakenormTranslator | None = None) -> dg.AssetsDefinition:
    """One op reads a package once and writes every table of its streams: raw, typed root, children, each the
    asset `translator` makes of it. `known_plans`: the source's plans with its stored ones (`stream_plans`), when
    the caller has read them."""
    tables = SourceTables(config, source)
    every_plan = stream_plans(source, stored_in=tables) if known_plans is None else known_plans
    plans = {s: p for s, p in every_plan.items() if s in streams}
    specs = stream_asset_specs(tables, streams, plans, translator)
    raw, typed, keys = specs.raw, specs.typed, specs.keys

    @dg.multi_asset(
        name=f"{source.name}_normalize_loads", specs=[*raw.values(), *typed.values()],
        check_specs=check_specs(tables, plans, keys),
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
                yield from materialize_per_load(spec.key, per_load, state, versions, table=tables.raw_table(stream))
        for (stream, table), spec in typed.items():
            per_load = typed_load_counts(results, stream, table)
            if per_load is not None and spec.key in context.selected_asset_keys:
                state = typed_table_metadata(spark.spark, tables, plans[stream], table, keys)
                yield from materialize_per_load(spec.key, per_load, state, versions, table=table)
        yield from check_events(context, check_results(spark.spark, tables, plans, results, keys))
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


def typed_table_metadata(spark: SparkSession, tables: SourceTables, plan: StreamPlan, table: str,
                         keys: TableKeys | None = None) -> dict:
    """`keys`: the tables' asset keys, which the column lineage names."""
    names, key_of = tables.names, keys or TableKeys(tables.source.name)
    history = plan.disposition.history_table(plan, names)
    doc = find_table(plan.schema, plan.tables[0] if table == history else table)  # history: root's columns
    parent = plan.disposition.graph_parent(plan, names, table)
    raw_key = key_of(tables.raw_table(plan.settings.name))
    path = tables.path(table)
    return {**table_state(spark, path, tables.storage_options(path), column_json_paths(plan.schema, doc)),
            "dagster/column_lineage": column_lineage(plan.schema, doc, names, raw_key, key_of, parent),
            **name_collisions(plan, doc["name"])}


def materialize_per_load(key: dg.AssetKey, per_load: dict[str, dict], table_wide: dict,
                         versions: dict[str, dict[str, int]] | None = None, *, table: str
                         ) -> Iterator[dg.AssetMaterialization]:
    """One materialization per load the run normalized, each with that load's own counts, plus what describes the
    whole table after the run (row count, schema, lineage). Each is yielded for its partition (the table assets are
    skippable: no output), so a load of the run that failed gets none and its partition shows the failure.
    `versions`: per load, the Delta version its commit gave each table (`delta_version` of the partition);
    `table`: the asset's table (its key may be a translator's)."""
    for load_id, counts in per_load.items():
        version = (versions or {}).get(load_id, {}).get(table)
        counts = counts if version is None else {**counts, "delta_version": version}
        yield dg.AssetMaterialization(asset_key=key, partition=load_id, metadata={**table_wide, **counts})


def source_job_name(source: SourceConfig) -> str:
    return f"{source.name}_normalize"


def build_source_definitions(config: LakenormConfig, source: SourceConfig, translator: LakenormTranslator | None = None,
                             streams: list[str] | None = None, plans: dict[str, StreamPlan] | None = None
                             ) -> dg.Definitions:
    """Everything of one source: its assets (as `translator` makes them), the job that normalizes loads, the
    landing sensor (and, under `automation: on_upstream`, the source's automation condition sensor), the rebuild, observe and maintenance jobs and the schedules. Each job runs its one step in
    the run's process (a step process of its own would load the code location again before its JVM).
    `streams`, `plans`: the source's `known_streams` and `stream_plans`, when the caller has them."""
    streams = known_streams(config, source) if streams is None else streams
    if not streams:
        return dg.Definitions(sensors=[build_landing_sensor(config, source, job=None)])
    tables = SourceTables(config, source)
    plans = stream_plans(source, stored_in=tables) if plans is None else plans
    assets = build_source_assets(config, source, streams, plans, translator)
    job = dg.define_asset_job(source_job_name(source), selection=dg.AssetSelection.assets(assets),
                              executor_def=dg.in_process_executor,
                              description=f"Normalize load packages of source {source.name!r}.")
    automated = source.automation == "on_upstream"  # the landing sensor then registers loads, automation runs them
    jobs, schedules = build_schedules(tables, maintained_tables(tables, streams, plans), None if automated else job)
    keys = TableKeys(source.name, {spec.metadata["lakenorm/table"]: spec.key for spec in assets.specs})
    rebuild = rebuild_job(tables, [s for s in streams if s in plans], keys)
    system = system_table_assets(system_asset_specs(tables, translator), tables)
    ledger = [file_ledger_job(config, source)] if keeps_file_ledger(source) else []
    sensors = [build_landing_sensor(config, source, None if automated else job, *ledger)]
    if automated:
        sensors.append(build_automation_sensor(source, assets.keys))
    return dg.Definitions(assets=[assets, system], jobs=[job, rebuild, observe_job(source, system), *jobs, *ledger],
                          schedules=schedules, sensors=sensors)
