"""The landing sensor: new complete packages -> partitions + one run per load ID; producer files normalized before
and listed again changed -> a run of the source's file ledger job (`file_ledger`)."""
from collections.abc import Sequence
from typing import NamedTuple

import dagster as dg

from normalization_core.api import LakenormConfig, LoadPackage, Settling, SourceConfig, landed_since, settling_text
from pipeline_assets.file_ledger import changed_files_request
from pipeline_assets.partitions import load_ids_partitions


class Landed(NamedTuple):
    """What a tick found: load IDs not registered yet, how many units were rejected, the files still settling, the
    normalized files listed with another size or time (`Discovery.changed`), and where the next tick's listing
    starts (the sensor's cursor)."""

    new: list[str]
    rejected: int
    settling: Settling | None
    changed: tuple = ()
    cursor: str | None = None


FEW_PACKAGES = 100
"""Up to this many listed packages are looked up as partitions one by one; more (a full listing), all at once."""


def new_load_ids(config: LakenormConfig, source: SourceConfig, instance: dg.DagsterInstance, log: object,
                 cursor: str | None = None) -> Landed:
    """Complete units in the landing (any input kind) not yet registered as partitions, listed from `cursor` on (what
    is new since the last tick, and a full listing now and then: `inputs.package_listing`); how many were rejected;
    and the producer files still settling (said in the log when there is something new, else in the skip reason)."""
    partitions = load_ids_partitions(source).name

    def registered(packages: Sequence[LoadPackage]) -> set[str]:
        ids = [p.load_id for p in packages]
        if len(ids) > FEW_PACKAGES:
            return set(ids) & set(instance.get_dynamic_partitions(partitions))
        return {i for i in ids if instance.has_dynamic_partition(partitions, i)}

    found, next_cursor = landed_since(config, source, cursor, registered)
    for rejected in found.rejected:
        log.warning(rejected.reason)  # type: ignore[attr-defined]
    new = [p.load_id for p in found.packages]
    if new and found.settling is not None:
        log.info(f"{source.name}: {settling_text(found.settling)}")  # type: ignore[attr-defined]
    return Landed(new, len(found.rejected), found.settling, found.changed, next_cursor)


def skip_reason(landed: Landed) -> str:
    """`no new complete packages (0 rejected)`, and what still settles: `; 3 files (1 package) still settling,
    readable from 06:41:12 UTC (in 42 s)` (as `lakenorm normalize` says it)."""
    reason = f"no new complete packages ({landed.rejected} rejected)"
    return reason if landed.settling is None else f"{reason}; {settling_text(landed.settling)}"


def load_run_requests(source: SourceConfig, load_ids: list[str], job_name: str | None = None) -> list[dg.RunRequest]:
    return [dg.RunRequest(run_key=load_id, partition_key=load_id, job_name=job_name,
                          tags={"lakenorm/source": source.name}) for load_id in load_ids]


def build_landing_sensor(config: LakenormConfig, source: SourceConfig, job: object | None,
                         ledger_job: dg.JobDefinition | None = None) -> dg.SensorDefinition:
    """`ledger_job` (producer inputs): the file ledger job it requests when normalized files changed."""
    partitions = load_ids_partitions(source)
    targets = [j for j in (job, ledger_job) if j is not None]

    @dg.sensor(name=f"{source.name}_landing_sensor", jobs=targets or None, minimum_interval_seconds=30,
               default_status=dg.DefaultSensorStatus.RUNNING,
               description=f"Registers complete load packages in {source.landing} and normalizes each once.")
    def landing_sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        landed = new_load_ids(config, source, context.instance, context.log, context.cursor)
        new = landed.new
        recording = changed_files_request(source, landed.changed) if ledger_job is not None else []
        if not new and not recording:
            return dg.SensorResult(skip_reason=skip_reason(landed), cursor=landed.cursor)
        requests = load_run_requests(source, new, job.name) if job is not None else []  # type: ignore[attr-defined]
        return dg.SensorResult(run_requests=requests + recording, cursor=landed.cursor,
                               dynamic_partitions_requests=[partitions.build_add_request(new)] if new else [])

    return landing_sensor
