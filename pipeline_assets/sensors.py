"""The landing sensor: new complete packages -> partitions + one run over all of them (at most `max_loads_per_run`
load IDs a run); producer files normalized before and listed again changed -> a run of the source's file ledger job
(`file_ledger`)."""
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import dagster as dg

from normalization_core.api import LakenormConfig, Settling, SourceConfig, landed_since, settling_text
from pipeline_assets.file_ledger import changed_files_request
from pipeline_assets.partitions import load_ids_partitions


RANGE_START, RANGE_END = "dagster/asset_partition_range_start", "dagster/asset_partition_range_end"
"""Dagster's tags of a run over a range of partitions (what a single-run backfill launches)."""


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

    def registered(load_ids: Sequence[str]) -> set[str]:
        if len(load_ids) > FEW_PACKAGES:
            return set(load_ids) & set(instance.get_dynamic_partitions(partitions))
        return {i for i in load_ids if instance.has_dynamic_partition(partitions, i)}

    found, next_cursor = landed_since(config, source, cursor, lambda found: registered([p.load_id for p in found]),
                                      done_before=registered)
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


def partition_runs(order: Sequence[str], load_ids: Sequence[str], max_loads: int) -> list[list[str]]:
    """`load_ids` grouped into runs of at most `max_loads`, each a stretch of neighbours in `order` (the source's
    partitions as Dagster orders them: by when each was added). A run over a range covers every partition between
    its ends, so a load ID that sits elsewhere (added earlier, by the other of sensor and polling schedule) gets a
    run of its own or with its own neighbours."""
    wanted, runs, current = set(load_ids), [], []
    for key in order:
        if key in wanted and len(current) < max_loads:
            current.append(key)
            continue
        if current:
            runs.append(current)
        current = [key] if key in wanted else []
    return runs + [current] if current else runs


def load_run_requests(source: SourceConfig, order: Sequence[str], load_ids: Sequence[str],
                      job_name: str | None = None) -> list[dg.RunRequest]:
    """One run of `job_name` per `partition_runs` group: a group of one load is a run of its partition, a larger one
    a run over the range from its first to its last load (normalized in one pass, each partition still materialized
    alone). `order`: the source's partitions once `load_ids` are added."""
    requests = []
    for loads in partition_runs(order, load_ids, source.max_loads_per_run):
        tags = {"lakenorm/source": source.name}
        if len(loads) == 1:
            requests.append(dg.RunRequest(run_key=loads[0], partition_key=loads[0], job_name=job_name, tags=tags))
        else:
            requests.append(dg.RunRequest(run_key=f"{loads[0]}..{loads[-1]}", job_name=job_name,
                                          tags={**tags, RANGE_START: loads[0], RANGE_END: loads[-1]}))
    return requests


def loads_of_run(tags: Mapping[str, str], order: Sequence[str]) -> list[str]:
    """The load IDs a run covers, from its tags: its partition, or its range of `order` (the source's partitions
    as Dagster orders them); [] for a run of neither."""
    if "dagster/partition" in tags:
        return [tags["dagster/partition"]]
    if RANGE_START not in tags or tags[RANGE_START] not in order or tags.get(RANGE_END) not in order:
        return []
    return list(order[order.index(tags[RANGE_START]):order.index(tags[RANGE_END]) + 1])


def build_landing_sensor(config: LakenormConfig, source: SourceConfig, job: object | None,
                         ledger_job: dg.JobDefinition | None = None) -> dg.SensorDefinition:
    """`ledger_job` (producer inputs): the file ledger job it requests when normalized files changed."""
    partitions = load_ids_partitions(source)
    targets = [j for j in (job, ledger_job) if j is not None]

    runs = (f"normalizes each once, the new ones of a tick in one run (at most {source.max_loads_per_run} a run)"
            if source.automation == "sensor" else "leaves their runs to the source's automation")

    @dg.sensor(name=f"{source.name}_landing_sensor", jobs=targets or None, minimum_interval_seconds=30,
               default_status=dg.DefaultSensorStatus.RUNNING,
               description=f"Registers complete load packages in {source.landing} and {runs}.")
    def landing_sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        landed = new_load_ids(config, source, context.instance, context.log, context.cursor)
        new = landed.new
        recording = changed_files_request(source, landed.changed) if ledger_job is not None else []
        if not new and not recording:
            return dg.SensorResult(skip_reason=skip_reason(landed), cursor=landed.cursor)
        # Dagster appends the new partitions in this order before it launches the runs: they are neighbours.
        job_name = None if job is None else job.name  # type: ignore[attr-defined]
        requests = [] if job is None else load_run_requests(source, new, new, job_name)
        return dg.SensorResult(run_requests=requests + recording, cursor=landed.cursor,
                               dynamic_partitions_requests=[partitions.build_add_request(new)] if new else [])

    return landing_sensor
