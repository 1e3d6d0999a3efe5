"""Per source: a daily maintenance job + schedule (OPTIMIZE, VACUUM) and an optional polling schedule."""

from collections.abc import Mapping

import dagster as dg

from normalization_core.api import (
    LakenormConfig,
    SourceConfig,
    SourceTables,
    StreamPlan,
    key_ordered_tables,
    maintain_tables,
    output_tables,
)
from pipeline_assets.partitions import load_ids_partitions
from pipeline_assets.resources import SparkSessionResource
from pipeline_assets.sensors import load_run_requests, new_load_ids, skip_reason

MAINTENANCE_CRON = "0 3 * * *"
POLLING_CRON = "*/5 * * * *"


def maintained_tables(source_tables: SourceTables, streams: list[str], plans: dict[str, StreamPlan]
                      ) -> dict[str, tuple[str, ...]]:
    """Every table a source may have (raw, typed, history, the source's system tables), with the key columns
    of those kept in key order (empty: none)."""
    names = source_tables.names
    tables: dict[str, tuple[str, ...]] = {source_tables.raw_table(s): () for s in streams}
    for plan in plans.values():
        tables.update({**dict.fromkeys(output_tables(plan, names), ()), **key_ordered_tables(plan, names)})
    system = [names.loads_table, names.registry_table, names.versions_table, names.quarantine_table]
    return {**tables, **dict.fromkeys(system, ())}


def maintenance_job_name(source: SourceConfig) -> str:
    return f"{source.name}_maintenance"


def build_maintenance_job(source_tables: SourceTables, tables: Mapping[str, tuple[str, ...]]) -> dg.JobDefinition:
    source = source_tables.source
    paths = {source_tables.path(t): keys for t, keys in tables.items()}

    @dg.op(name=f"{source.name}_optimize_and_vacuum",
           description="Delta OPTIMIZE (compaction; tables kept in key order are rewritten in that order) then "
                       "VACUUM (default retention) on each table of the source.")
    def optimize_and_vacuum(context: dg.OpExecutionContext, spark: SparkSessionResource) -> None:
        for done in maintain_tables(spark.spark, list(paths), key_orders={p: k for p, k in paths.items() if k}):
            context.log.info(f"{done.path}: compacted {done.files_removed} files into {done.files_added}, "
                             f"vacuumed {done.files_vacuumed}")

    @dg.job(name=maintenance_job_name(source), description=f"Maintenance of the Delta tables of {source.name!r}.",
            executor_def=dg.in_process_executor)
    def maintenance() -> None:
        optimize_and_vacuum()

    return maintenance


def build_schedules(source_tables: SourceTables, tables: Mapping[str, tuple[str, ...]],
                    normalize_job: object | None) -> tuple[list[dg.JobDefinition], list[dg.ScheduleDefinition]]:
    config, source = source_tables.config, source_tables.source
    job = build_maintenance_job(source_tables, tables)
    schedules = [dg.ScheduleDefinition(
        name=maintenance_job_name(source), job=job, cron_schedule=MAINTENANCE_CRON, execution_timezone="UTC",
        default_status=dg.DefaultScheduleStatus.RUNNING, description="Daily OPTIMIZE and VACUUM.")]
    if normalize_job is not None:
        schedules.append(build_polling_schedule(config, source, normalize_job))
    return [job], schedules


def build_polling_schedule(config: LakenormConfig, source: SourceConfig, job: object) -> dg.ScheduleDefinition:
    """An alternative to the sensor where sensors are unwelcome; stopped unless turned on."""
    partitions = load_ids_partitions(source)

    @dg.schedule(name=f"{source.name}_polling", job=job, cron_schedule=POLLING_CRON, execution_timezone="UTC",
                 default_status=dg.DefaultScheduleStatus.STOPPED,
                 description=f"Every 5 minutes: registers and normalizes new packages in {source.landing}.")
    def polling(context: dg.ScheduleEvaluationContext) -> list[dg.RunRequest] | dg.SkipReason:
        landed = new_load_ids(config, source, context.instance, context.log)
        for change in landed.changed:  # (a schedule runs one job: the sensor's file ledger run records them)
            if change.warning:
                context.log.warning(change.warning)
        new = landed.new
        if not new:
            return dg.SkipReason(skip_reason(landed))
        # Schedules cannot return partition requests; registering first is what the sensor's daemon does.
        context.instance.add_dynamic_partitions(partitions.name, new)
        return load_run_requests(source, context.instance.get_dynamic_partitions(partitions.name), new)

    return polling
