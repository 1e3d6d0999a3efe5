"""Asset checks per table (SPEC §8): specs for the source's op, results for the loads of a run.

The checks are not blocking: they run after every table of the op has been committed, so blocking
could not keep bad rows out; it would only fail the run (whose run_key the sensor never requests
again) and hide the metadata. A failing check is reported with its offending keys instead.

Severity per check (`SEVERITY`): broken keys are errors, rejected lines a warning. Checks about the
run's loads alone (`PER_LOAD`) are partitioned by load ID and judge each load of the run on its own: each
load's partition gets its own evaluation (`LoadChecks`, reported by `check_events`), also when one run
normalizes several loads.
"""
from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial

import dagster as dg
from dagster._core.definitions.asset_checks.asset_check_evaluation import (  # not exported by dagster 1.13
    AssetCheckEvaluationTargetMaterializationData,
)
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


@dataclass(frozen=True)
class LoadChecks:
    """A per-load check's result for each load it judged, by load ID."""

    key: dg.AssetCheckKey
    by_load: dict[str, dg.AssetCheckResult]


CheckResults = list[dg.AssetCheckResult | LoadChecks]


def check_results(spark: SparkSession, tables: SourceTables, plans: dict[str, StreamPlan],
                  results: list[LoadResult], keys: TableKeys | None = None
                  ) -> Iterator[dg.AssetCheckResult | LoadChecks]:
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
                   results: list[LoadResult], keys: TableKeys) -> Iterator[Callable[[], CheckResults]]:
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
                       results: list[LoadResult], loads: list[str], key: dg.AssetKey) -> CheckResults:
    stream, root = plan.settings.name, check.table
    discarded = {r.load_id: r.streams[stream].discarded[root].rows for r in results
                 if stream in r.streams and root in r.streams[stream].discarded}
    outcomes = data_checks.rows_typed_by_load(read_table(spark, tables.raw_path(stream)),
                                              read_table(spark, tables.path(root)), tables.names, loads, discarded)
    return [_load_checks(key, ROWS_TYPED, outcomes, "load whose counts differ")]


def _unique_key_result(spark: SparkSession, tables: SourceTables, plan: StreamPlan, check: TableCheck,
                       results: list[LoadResult], loads: list[str], key: dg.AssetKey) -> CheckResults:
    keys = primary_key_columns(plan, find_table(plan.schema, check.table))
    outcome = data_checks.unique_primary_key(read_table(spark, tables.path(check.table)), keys)
    return [_check_result(key, UNIQUE_KEY, outcome, "duplicated keys")]


def _orphans_result(spark: SparkSession, tables: SourceTables, plan: StreamPlan, check: TableCheck,
                    results: list[LoadResult], loads: list[str], key: dg.AssetKey) -> CheckResults:
    child = find_table(plan.schema, check.table)
    tables_read = (read_table(spark, tables.path(check.table)), read_table(spark, tables.path(check.against)),
                   tables.names, find_table(plan.schema, child["parent"]), child)
    if check.per_load:
        outcomes = data_checks.orphan_child_rows_by_load(*tables_read, loads)
        return [_load_checks(key, NO_ORPHANS, outcomes, "orphan row keys")]
    outcome = data_checks.orphan_child_rows(*tables_read)
    return [_check_result(key, NO_ORPHANS, outcome, "orphan row keys")]


def _one_current_result(spark: SparkSession, tables: SourceTables, plan: StreamPlan, check: TableCheck,
                        results: list[LoadResult], loads: list[str], key: dg.AssetKey) -> CheckResults:
    history, current = read_table(spark, tables.path(check.table)), read_table(spark, tables.path(check.against))
    return [_one_current(history, current, tables.names, key, find_table(plan.schema, check.against))]


def _overlap_result(spark: SparkSession, tables: SourceTables, plan: StreamPlan, check: TableCheck,
                    results: list[LoadResult], loads: list[str], key: dg.AssetKey) -> CheckResults:
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
                          ) -> LoadChecks:
    """Per load of the run: WARN when it rejected or quarantined lines, with its counts."""
    outcomes = {}
    for r in results:
        rejected = r.streams[stream].rejected_lines if stream in r.streams else 0
        failing = bool(rejected or r.quarantined_lines)
        outcomes[r.load_id] = data_checks.CheckOutcome(not failing, int(failing), (r.load_id,) if failing else (), {
            "rejected_lines": rejected, "quarantined_lines": r.quarantined_lines})
    return _load_checks((keys or TableKeys(tables.source.name))(tables.raw_table(stream)), NO_REJECTED, outcomes,
                        "load with rejected or quarantined lines")


def _load_checks(key: dg.AssetKey, name: str, outcomes: dict[str, data_checks.CheckOutcome], what: str
                 ) -> LoadChecks:
    by_load = {load_id: _check_result(key, name, outcome, what, {"load_id": load_id})
               for load_id, outcome in outcomes.items()}
    return LoadChecks(dg.AssetCheckKey(key, name), by_load)


def _check_result(key: dg.AssetKey, name: str, outcome: data_checks.CheckOutcome, what: str,
                  extra: dict | None = None) -> dg.AssetCheckResult:
    metadata: dict = {"failures": outcome.failures, **outcome.counts, **(extra or {})}
    if outcome.offending:
        metadata["offending_keys"] = list(outcome.offending)
    description = None if outcome.passed else (
        f"{outcome.failures} {what}, e.g. {', '.join(outcome.offending[:5])}")
    return dg.AssetCheckResult(asset_key=key, check_name=name, passed=outcome.passed, metadata=metadata,
                               description=description, severity=SEVERITY[name])


def check_events(context: dg.AssetExecutionContext, checks: Iterator[dg.AssetCheckResult | LoadChecks]
                 ) -> Iterator[dg.AssetCheckResult | dg.Output | dg.AssetCheckEvaluation]:
    """What the op yields for the selected checks: a table-wide result as it is; a per-load check's output once,
    then one evaluation per load tied to that load's partition and to its latest materialization (Dagster ties
    an `AssetCheckResult` to a partition only in a run of one partition)."""
    for check in checks:
        key = check.key if isinstance(check, LoadChecks) else dg.AssetCheckKey(check.asset_key, check.check_name)
        if key not in context.selected_asset_check_keys:
            continue
        if isinstance(check, dg.AssetCheckResult):
            yield check
            continue
        yield dg.Output(None, output_name=context.assets_def.get_output_name_for_asset_check_key(key))
        for load_id, result in check.by_load.items():
            yield dg.AssetCheckEvaluation(
                asset_key=key.asset_key, check_name=key.name, passed=result.passed, metadata=result.metadata,
                severity=result.severity, description=result.description, blocking=False, partition=load_id,
                target_materialization_data=_latest_materialization(context.instance, key.asset_key, load_id))


def _latest_materialization(instance: dg.DagsterInstance, key: dg.AssetKey, load_id: str
                            ) -> AssetCheckEvaluationTargetMaterializationData | None:
    """The partition's latest materialization (this run's, when the run wrote the table): the UI shows a check as
    current only while it targets that one."""
    records = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=key, asset_partitions=[load_id]),
                                              limit=1).records
    if not records:
        return None
    latest = records[0]
    return AssetCheckEvaluationTargetMaterializationData(storage_id=latest.storage_id, run_id=latest.run_id,
                                                         timestamp=latest.timestamp)
