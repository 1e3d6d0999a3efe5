"""Asset checks per table (SPEC §8): specs for the source's op, results for the loads of a run.

The checks are not blocking: they run after every table of the op has been committed, so blocking
could not keep bad rows out; it would only fail the run (whose run_key the sensor never requests
again) and hide the metadata. A failing check is reported with its offending keys instead.

Severity per check (`SEVERITY`): broken keys are errors, rejected lines a warning. Checks about the
run's loads alone (`PER_LOAD`) are partitioned by load ID: Dagster 1.13 ties their evaluation to the
partition in a one-load run; a run of several loads gets one evaluation (Dagster records a check once
per step) whose metadata names the loads (`load_ids`, counts by load).
"""
from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import dagster as dg
from pyspark.sql import SparkSession

from normalization_core.api import (
    ConfigError,
    LoadResult,
    SourceConfig,
    SourceTables,
    StreamPlan,
    SystemNames,
    TableSchema,
    data_checks,
    find_table,
    history_table,
    is_delta_table,
    output_tables,
    read_table,
    resolve_primary_key,
    small_input_conf,
    system_names,
    table_size_bytes,
)
from pipeline_assets.partitions import load_ids_partitions

ROWS_TYPED = "rows_typed_per_load"
NO_ORPHANS = "no_orphan_child_rows"
UNIQUE_KEY = "primary_key_unique"
ONE_CURRENT = "one_current_version_per_key"
NO_OVERLAP = "non_overlapping_validity"
NO_REJECTED = "no_rejected_lines"

WARN, ERROR = dg.AssetCheckSeverity.WARN, dg.AssetCheckSeverity.ERROR
SEVERITY = {ROWS_TYPED: ERROR, NO_ORPHANS: ERROR, UNIQUE_KEY: ERROR, ONE_CURRENT: ERROR, NO_OVERLAP: ERROR,
            NO_REJECTED: WARN}
PER_LOAD = {ROWS_TYPED, NO_REJECTED}
CHECK_THREADS = 4
"""Checks about the run's loads alone; orphans are too, except under a history (checked table-wide)."""


def check_specs(tables: SourceTables, plans: dict[str, StreamPlan]) -> list[dg.AssetCheckSpec]:
    source = tables.source
    specs = []
    for stream, plan in plans.items():
        mode = plan.mode
        root, *children = plan.schema["tables"]
        specs.append(_spec(source, NO_REJECTED, tables.raw_table(stream), (
            "No line of the run's loads was rejected (unparseable JSON, not an object) or quarantined.")))
        if mode in ("append", "overwrite"):
            specs.append(_spec(source, ROWS_TYPED, root["name"], (
                "Each load of the run typed every valid raw line into exactly one row (nothing dropped).")))
        if mode == "append_dedup" and primary_key_columns(plan, root):
            specs.append(_spec(source, UNIQUE_KEY, root["name"], "The primary key is unique in the current table."))
        if mode == "append_dedup":
            specs.extend(history_check_specs(history_key(source, plan)))
        specs.extend(_spec(source, NO_ORPHANS, child["name"], (
            f"Every row's parent key exists in {_parent_table(source, plan, child)!r}."),
            per_load=not _hangs_off_history(plan, child)) for child in children)
    return specs


def _spec(source: SourceConfig, name: str, table: str, description: str, per_load: bool | None = None
          ) -> dg.AssetCheckSpec:
    """A check of `[source, table]`; per load: partitioned by load ID (a Preview feature of Dagster 1.13)."""
    partitioned = name in PER_LOAD if per_load is None else per_load
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.PreviewWarning)
        return dg.AssetCheckSpec(name, asset=[source.name, table], description=description,
                                 metadata={"severity": SEVERITY[name].value},
                                 partitions_def=load_ids_partitions(source) if partitioned else None)


def history_key(source: SourceConfig, plan: StreamPlan) -> dg.AssetKey:
    """The asset of an `append_dedup` stream's history table."""
    return dg.AssetKey([source.name, history_table(plan, system_names(source.convention))])


def _parent_table(source: SourceConfig, plan: StreamPlan, child: TableSchema) -> str:
    """The table holding a child's parent rows: a dedup root's children hang off its history."""
    return history_key(source, plan).path[-1] if _hangs_off_history(plan, child) else child["parent"]


def _hangs_off_history(plan: StreamPlan, child: TableSchema) -> bool:
    """A dedup stream's current table keeps only the newest version of each key: the root's direct
    children link to history rows (of every version, so not only of the run's loads)."""
    return plan.mode == "append_dedup" and child["parent"] == plan.tables[0]


def history_check_specs(history_key: dg.AssetKey) -> list[dg.AssetCheckSpec]:
    """Checks of a `<stream>_scd` history asset (wired by the asset that writes it)."""
    return [
        dg.AssetCheckSpec(ONE_CURRENT, asset=history_key, metadata={"severity": ERROR.value}, description=(
            "Each key has at most one current version, and the current table holds exactly those versions.")),
        dg.AssetCheckSpec(NO_OVERLAP, asset=history_key, metadata={"severity": ERROR.value},
                          description="The validity intervals of a key's versions do not overlap."),
    ]


def primary_key_columns(plan: StreamPlan, root: TableSchema) -> list[str]:
    """Root columns of the primary key's paths; [] when a path is not a column."""
    try:
        return list(resolve_primary_key(plan.settings, root))
    except ConfigError:
        return []


def check_results(spark: SparkSession, tables: SourceTables, plans: dict[str, StreamPlan],
                  results: list[LoadResult]) -> Iterator[dg.AssetCheckResult]:
    """Results of `check_specs` for the tables the run's loads wrote, in order. The checks' Spark queries run
    side by side (a few threads), and over small tables with a small pass's settings (`small_input_conf`):
    planning and compiling each query is most of what a check over a few thousand rows costs."""
    checks = list(_checks_to_run(spark, tables, plans, results))
    with small_input_conf(spark, _checked_bytes(tables, plans, results)), \
            ThreadPoolExecutor(max_workers=CHECK_THREADS, thread_name_prefix="lakenorm-check") as pool:
        for done in pool.map(lambda check: check(), checks):
            yield from done


def _checked_bytes(tables: SourceTables, plans: dict[str, StreamPlan], results: list[LoadResult]) -> int | None:
    """The size of the tables the checks may read: raw and typed tables of the run's streams (None: unknown)."""
    streams = [s for s in plans if any(s in r.streams for r in results)]
    paths = [tables.path(t) for s in streams for t in output_tables(plans[s], tables.names)]
    sizes = [table_size_bytes(p, tables.storage_options(p)) for p in paths + [tables.raw_path(s) for s in streams]]
    return sum(sizes) if None not in sizes else None


def _checks_to_run(spark: SparkSession, tables: SourceTables, plans: dict[str, StreamPlan],
                   results: list[LoadResult]) -> Iterator[Callable[[], list[dg.AssetCheckResult]]]:
    source, names, path = tables.source, tables.names, tables.path
    for stream, plan in plans.items():
        if any(stream in r.streams for r in results):
            yield partial(lambda s: [rejected_lines_result(tables, s, results)], stream)  # no Spark
        loads = [r.load_id for r in results if stream in r.streams and r.streams[stream].typed_rows]
        if not loads:
            continue
        root, *children = plan.schema["tables"]
        if plan.mode in ("append", "overwrite"):
            yield partial(_rows_typed_result, spark, tables, stream, root["name"], results, loads)
        keys = primary_key_columns(plan, root)
        if plan.mode == "append_dedup" and keys:
            yield partial(_unique_key_result, spark, tables, root["name"], keys)
        history = history_table(plan, names)
        if history is not None and is_delta_table(spark, path(history)):
            yield partial(history_check_results, spark, path(history), path(root["name"]), names,
                          history_key(source, plan), root)
        for child in children:
            if is_delta_table(spark, path(child["name"])):
                yield partial(_orphans_result, spark, tables, plan, child, loads)


def _rows_typed_result(spark: SparkSession, tables: SourceTables, stream: str, root: str,
                       results: list[LoadResult], loads: list[str]) -> list[dg.AssetCheckResult]:
    discarded = {r.load_id: r.streams[stream].discarded[root].rows for r in results
                 if stream in r.streams and root in r.streams[stream].discarded}
    outcome = data_checks.rows_typed_per_load(read_table(spark, tables.raw_path(stream)),
                                              read_table(spark, tables.path(root)), tables.names, loads, discarded)
    return [_result(tables.source, root, ROWS_TYPED, outcome, "load IDs whose counts differ", loads)]


def _unique_key_result(spark: SparkSession, tables: SourceTables, current: str, keys: list[str]
                       ) -> list[dg.AssetCheckResult]:
    outcome = data_checks.unique_primary_key(read_table(spark, tables.path(current)), keys)
    return [_result(tables.source, current, UNIQUE_KEY, outcome, "duplicated keys")]


def _orphans_result(spark: SparkSession, tables: SourceTables, plan: StreamPlan, child: TableSchema,
                    loads: list[str]) -> list[dg.AssetCheckResult]:
    source, path = tables.source, tables.path
    from_history = _hangs_off_history(plan, child)
    parent = read_table(spark, path(_parent_table(source, plan, child)))
    outcome = data_checks.orphan_child_rows(read_table(spark, path(child["name"])), parent, tables.names,
                                            find_table(plan.schema, child["parent"]), child,
                                            None if from_history else loads)
    return [_result(source, child["name"], NO_ORPHANS, outcome, "orphan row keys",
                    None if from_history else loads)]


def history_check_results(spark: SparkSession, history_path: str, current_path: str, names: SystemNames,
                          history_key: dg.AssetKey, current_table: str | TableSchema) -> list[dg.AssetCheckResult]:
    """Results of `history_check_specs` for a history table and its current table."""
    history, current = read_table(spark, history_path), read_table(spark, current_path)
    one = data_checks.one_current_version(history, current, names, current_table)
    overlap = data_checks.non_overlapping_validity(history, names)
    return [_check_result(history_key, ONE_CURRENT, one, "keys with a wrong current version"),
            _check_result(history_key, NO_OVERLAP, overlap, "keys with overlapping versions")]


def rejected_lines_result(tables: SourceTables, stream: str, results: list[LoadResult]) -> dg.AssetCheckResult:
    """WARN when a load of the run rejected or quarantined lines; names those loads and their counts."""
    rejected = {r.load_id: r.streams[stream].rejected_lines if stream in r.streams else 0 for r in results}
    quarantined = {r.load_id: r.quarantined_lines for r in results}
    failing = [load_id for load_id in rejected if rejected[load_id] or quarantined[load_id]]
    outcome = data_checks.CheckOutcome(not failing, len(failing), tuple(failing), {
        "rejected_lines": sum(rejected.values()), "quarantined_lines": sum(quarantined.values())})
    return _result(tables.source, tables.raw_table(stream), NO_REJECTED, outcome,
                   "loads with rejected or quarantined lines", [r.load_id for r in results],
                   {"rejected_lines_by_load": rejected, "quarantined_lines_by_load": quarantined})


def _result(source: SourceConfig, table: str, name: str, outcome: data_checks.CheckOutcome, what: str,
            load_ids: list[str] | None = None, extra: dict | None = None) -> dg.AssetCheckResult:
    """`load_ids`: the loads a per-load check looked at (named, as a run of several loads has one result)."""
    loads = {"load_ids": load_ids} if load_ids is not None else {}
    return _check_result(dg.AssetKey([source.name, table]), name, outcome, what, {**loads, **(extra or {})})


def _check_result(key: dg.AssetKey, name: str, outcome: data_checks.CheckOutcome, what: str,
                  extra: dict | None = None) -> dg.AssetCheckResult:
    metadata: dict = {"failures": outcome.failures, **outcome.counts, **(extra or {})}
    if outcome.offending:
        metadata["offending_keys"] = list(outcome.offending)
    description = None if outcome.passed else (
        f"{outcome.failures} {what}, e.g. {', '.join(outcome.offending[:5])}")
    return dg.AssetCheckResult(asset_key=key, check_name=name, passed=outcome.passed, metadata=metadata,
                               description=description, severity=SEVERITY[name])
