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
from pyspark.sql import DataFrame, SparkSession

from normalization_core.api import (
    ConfigError,
    LoadResult,
    SourceConfig,
    SourceTables,
    StreamPlan,
    SystemNames,
    TableCheck,
    TableSchema,
    data_checks,
    find_table,
    is_delta_table,
    output_tables,
    read_table,
    resolve_primary_key,
    small_input_conf,
    table_size_bytes,
)
from pipeline_assets.partitions import load_ids_partitions
from pipeline_assets.translator import TableKeys

ROWS_TYPED, NO_ORPHANS, UNIQUE_KEY = data_checks.ROWS_TYPED, data_checks.NO_ORPHANS, data_checks.UNIQUE_KEY
ONE_CURRENT, NO_OVERLAP, NO_REJECTED = data_checks.ONE_CURRENT, data_checks.NO_OVERLAP, data_checks.NO_REJECTED

WARN, ERROR = dg.AssetCheckSeverity.WARN, dg.AssetCheckSeverity.ERROR
SEVERITY = {ROWS_TYPED: ERROR, NO_ORPHANS: ERROR, UNIQUE_KEY: ERROR, ONE_CURRENT: ERROR, NO_OVERLAP: ERROR,
            NO_REJECTED: WARN}
PER_LOAD = {ROWS_TYPED, NO_REJECTED}
CHECK_THREADS = 4
"""Checks about the run's loads alone; orphans are too, except under a history (checked table-wide)."""


DESCRIPTIONS = {
    NO_REJECTED: "No line of the run's loads was rejected (unparseable JSON, not an object) or quarantined.",
    ROWS_TYPED: "Each load of the run typed every valid raw line into exactly one row (nothing dropped).",
    UNIQUE_KEY: "The primary key is unique in the current table.",
    ONE_CURRENT: "Each key has at most one current version, and the current table holds exactly those versions.",
    NO_OVERLAP: "The validity intervals of a key's versions do not overlap.",
    NO_ORPHANS: "Every row's parent key exists in {against!r}.",
}


def check_specs(tables: SourceTables, plans: dict[str, StreamPlan], keys: TableKeys | None = None
                ) -> list[dg.AssetCheckSpec]:
    """Per stream: its raw table's rejected lines, then the checks its disposition gives its typed tables; each
    on its table's asset (`keys`: the translated keys; default `[source, table]`)."""
    source, key = tables.source, keys or TableKeys(tables.source.name)
    specs = []
    for stream, plan in plans.items():
        specs.append(_spec(source, NO_REJECTED, key(tables.raw_table(stream)), DESCRIPTIONS[NO_REJECTED]))
        specs.extend(_spec(source, check.name, key(check.table),
                           DESCRIPTIONS[check.name].format(against=check.against),
                           per_load=check.per_load) for check in plan.disposition.checks(plan, tables.names))
    return specs


def _spec(source: SourceConfig, name: str, key: dg.AssetKey, description: str, per_load: bool | None = None
          ) -> dg.AssetCheckSpec:
    """A check of a table's asset; per load: partitioned by load ID (a Preview feature of Dagster 1.13)."""
    partitioned = name in PER_LOAD if per_load is None else per_load
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.PreviewWarning)
        return dg.AssetCheckSpec(name, asset=key, description=description,
                                 metadata={"severity": SEVERITY[name].value},
                                 partitions_def=load_ids_partitions(source) if partitioned else None)


def primary_key_columns(plan: StreamPlan, root: TableSchema) -> list[str]:
    """Root columns of the primary key's paths; [] when a path is not a column."""
    try:
        return list(resolve_primary_key(plan.settings, root))
    except ConfigError:
        return []


def check_results(spark: SparkSession, tables: SourceTables, plans: dict[str, StreamPlan],
                  results: list[LoadResult], keys: TableKeys | None = None) -> Iterator[dg.AssetCheckResult]:
    """Results of `check_specs` for the tables the run's loads wrote, in order. The checks' Spark queries run
    side by side (a few threads), and over small tables with a small pass's settings (`small_input_conf`):
    planning and compiling each query is most of what a check over a few thousand rows costs."""
    checks = list(_checks_to_run(spark, tables, plans, results, keys or TableKeys(tables.source.name)))
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
                   results: list[LoadResult], keys: TableKeys) -> Iterator[Callable[[], list[dg.AssetCheckResult]]]:
    """Each stream's rejected lines, then, when its loads typed rows, its disposition's checks (a check of a
    history or child table once that table exists), on the tables' asset `keys`."""
    for stream, plan in plans.items():
        if any(stream in r.streams for r in results):
            yield partial(lambda s: [rejected_lines_result(tables, s, results, keys)], stream)  # no Spark
        loads = [r.load_id for r in results if stream in r.streams and r.streams[stream].typed_rows]
        if not loads:
            continue
        for check in plan.disposition.checks(plan, tables.names):
            if check.name not in ON_EXISTING or is_delta_table(spark, tables.path(check.table)):
                yield partial(RUNNERS[check.name], spark, tables, plan, check, results, loads, keys(check.table))


def _rows_typed_result(spark: SparkSession, tables: SourceTables, plan: StreamPlan, check: TableCheck,
                       results: list[LoadResult], loads: list[str], key: dg.AssetKey
                       ) -> list[dg.AssetCheckResult]:
    stream, root = plan.settings.name, check.table
    discarded = {r.load_id: r.streams[stream].discarded[root].rows for r in results
                 if stream in r.streams and root in r.streams[stream].discarded}
    outcome = data_checks.rows_typed_per_load(read_table(spark, tables.raw_path(stream)),
                                              read_table(spark, tables.path(root)), tables.names, loads, discarded)
    return [_result(key, ROWS_TYPED, outcome, "load IDs whose counts differ", loads)]


def _unique_key_result(spark: SparkSession, tables: SourceTables, plan: StreamPlan, check: TableCheck,
                       results: list[LoadResult], loads: list[str], key: dg.AssetKey
                       ) -> list[dg.AssetCheckResult]:
    keys = primary_key_columns(plan, find_table(plan.schema, check.table))
    outcome = data_checks.unique_primary_key(read_table(spark, tables.path(check.table)), keys)
    return [_result(key, UNIQUE_KEY, outcome, "duplicated keys")]


def _orphans_result(spark: SparkSession, tables: SourceTables, plan: StreamPlan, check: TableCheck,
                    results: list[LoadResult], loads: list[str], key: dg.AssetKey
                    ) -> list[dg.AssetCheckResult]:
    child, scoped = find_table(plan.schema, check.table), loads if check.per_load else None
    outcome = data_checks.orphan_child_rows(read_table(spark, tables.path(check.table)),
                                            read_table(spark, tables.path(check.against)), tables.names,
                                            find_table(plan.schema, child["parent"]), child, scoped)
    return [_result(key, NO_ORPHANS, outcome, "orphan row keys", scoped)]


def _one_current_result(spark: SparkSession, tables: SourceTables, plan: StreamPlan, check: TableCheck,
                        results: list[LoadResult], loads: list[str], key: dg.AssetKey
                        ) -> list[dg.AssetCheckResult]:
    history, current = read_table(spark, tables.path(check.table)), read_table(spark, tables.path(check.against))
    return [_one_current(history, current, tables.names, key, find_table(plan.schema, check.against))]


def _overlap_result(spark: SparkSession, tables: SourceTables, plan: StreamPlan, check: TableCheck,
                    results: list[LoadResult], loads: list[str], key: dg.AssetKey
                    ) -> list[dg.AssetCheckResult]:
    return [_no_overlap(read_table(spark, tables.path(check.table)), tables.names, key)]


RUNNERS = {ROWS_TYPED: _rows_typed_result, UNIQUE_KEY: _unique_key_result, NO_ORPHANS: _orphans_result,
           ONE_CURRENT: _one_current_result, NO_OVERLAP: _overlap_result}
"""Each typed-table check's results (the checks a disposition gives a stream: `Disposition.checks`)."""
ON_EXISTING = {ONE_CURRENT, NO_OVERLAP, NO_ORPHANS}
"""Checks run once their table exists (a history or child table a load may not have written yet)."""


def history_check_results(spark: SparkSession, history_path: str, current_path: str, names: SystemNames,
                          history_key: dg.AssetKey, current_table: str | TableSchema) -> list[dg.AssetCheckResult]:
    """The history checks (`ONE_CURRENT`, `NO_OVERLAP`) of a history table and its current table."""
    history, current = read_table(spark, history_path), read_table(spark, current_path)
    return [_one_current(history, current, names, history_key, current_table), _no_overlap(history, names, history_key)]


def _one_current(history: DataFrame, current: DataFrame, names: SystemNames, history_key: dg.AssetKey,
                 current_table: str | TableSchema) -> dg.AssetCheckResult:
    outcome = data_checks.one_current_version(history, current, names, current_table)
    return _check_result(history_key, ONE_CURRENT, outcome, "keys with a wrong current version")


def _no_overlap(history: DataFrame, names: SystemNames, history_key: dg.AssetKey) -> dg.AssetCheckResult:
    return _check_result(history_key, NO_OVERLAP, data_checks.non_overlapping_validity(history, names),
                         "keys with overlapping versions")


def rejected_lines_result(tables: SourceTables, stream: str, results: list[LoadResult], keys: TableKeys | None = None
                          ) -> dg.AssetCheckResult:
    """WARN when a load of the run rejected or quarantined lines; names those loads and their counts."""
    rejected = {r.load_id: r.streams[stream].rejected_lines if stream in r.streams else 0 for r in results}
    quarantined = {r.load_id: r.quarantined_lines for r in results}
    failing = [load_id for load_id in rejected if rejected[load_id] or quarantined[load_id]]
    outcome = data_checks.CheckOutcome(not failing, len(failing), tuple(failing), {
        "rejected_lines": sum(rejected.values()), "quarantined_lines": sum(quarantined.values())})
    return _result((keys or TableKeys(tables.source.name))(tables.raw_table(stream)), NO_REJECTED, outcome,
                   "loads with rejected or quarantined lines", [r.load_id for r in results],
                   {"rejected_lines_by_load": rejected, "quarantined_lines_by_load": quarantined})


def _result(key: dg.AssetKey, name: str, outcome: data_checks.CheckOutcome, what: str,
            load_ids: list[str] | None = None, extra: dict | None = None) -> dg.AssetCheckResult:
    """`load_ids`: the loads a per-load check looked at (named, as a run of several loads has one result)."""
    loads = {"load_ids": load_ids} if load_ids is not None else {}
    return _check_result(key, name, outcome, what, {**loads, **(extra or {})})


def _check_result(key: dg.AssetKey, name: str, outcome: data_checks.CheckOutcome, what: str,
                  extra: dict | None = None) -> dg.AssetCheckResult:
    metadata: dict = {"failures": outcome.failures, **outcome.counts, **(extra or {})}
    if outcome.offending:
        metadata["offending_keys"] = list(outcome.offending)
    description = None if outcome.passed else (
        f"{outcome.failures} {what}, e.g. {', '.join(outcome.offending[:5])}")
    return dg.AssetCheckResult(asset_key=key, check_name=name, passed=outcome.passed, metadata=metadata,
                               description=description, severity=SEVERITY[name])
