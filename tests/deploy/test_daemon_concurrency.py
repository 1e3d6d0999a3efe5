"""Runs under a real `dagster-daemon` on a PostgreSQL instance, each a client of one Spark Connect engine as in the
stack (`make stack-up`), in one code location as a user's project holds it
(`automation_location.py`): three packages land at once on a source whose runs hold at most two loads, the landing
sensor asks for two runs (a range of two loads and one load), the queue launches them side by side, both succeed,
each load's partition is materialized and checked alone, the tables equal a serial run of the classic local session,
and every Delta commit retried after a concurrent writer is a warning in its run's event log. And a source under
Declarative Automation: its upstream asset materializes, lands two packages, and one run normalizes both."""
from __future__ import annotations

import json
import math
import os
import re
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pyarrow.parquet as pq
import pytest
import yaml
from dagster._core.instance.ref import InstanceRef  # not exported by dagster 1.13
from pyspark.sql import Column
from pyspark.sql import functions as F

from deploy.services import create_instance_tables, dagster_env, postgres, start_dagster_daemon, stop
from lakenorm_app.commands import main
from lakenorm_app.samples import SampleSpec, write_catalog, write_sample_packages
from normalization_core.configuration.config import load_config
from normalization_core.io.delta import read_table
from normalization_core.runtime.engine import ENGINE_DIR_ENV
from normalization_core.runtime.engine_runs import runs_served
from normalization_core.runtime.spark import build_spark_session
from pipeline_assets.sensors import RANGE_END, RANGE_START
from tests.deploy.automation_location import UPSTREAM, extract
from tests.normalization_core.table_snapshots import SAMPLE_TABLES, snapshot, write_config

REPO = Path(__file__).resolve().parents[2]
PACKAGES, MAX_LOADS_PER_RUN = 3, 2  # two runs at once already commit to every table side by side
RETRY = re.compile(r"concurrent commit on (\S+) \(attempt (\d+) of \d+\)")
SPEC = SampleSpec(packages=PACKAGES, orders=6, customers=4, events=5, update_ratio=0.5)


def land_at_once(landing: Path, spec: SampleSpec) -> list[str]:
    """Every package written aside, then each moved in complete: the sensor's first tick sees all of them."""
    staging = landing.parent / ".staging"
    load_ids = write_sample_packages(staging, spec)
    landing.mkdir(parents=True)
    for load_id in load_ids:
        os.replace(staging / load_id, landing / load_id)
    return load_ids


@dataclass(frozen=True)
class Stack:
    """The daemon's instance (PostgreSQL), the daemon, its log and its warehouse's configuration."""

    instance: dg.DagsterInstance
    daemon: subprocess.Popen
    log: Path
    config: Path
    engine: Path
    served: int
    """Runs the engine had served before the daemon started."""

    def log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]


def dagster_home(folder: Path, max_concurrent_runs: int) -> Path:
    settings = yaml.safe_load((REPO / "deploy" / "dagster.local.yaml").read_text())
    # A local warehouse: runs of one source may commit side by side (the stack's one-per-source limit is for s3a://).
    settings["concurrency"]["runs"] = {"max_concurrent_runs": max_concurrent_runs}
    settings["backfills"] = {"use_threads": True, "num_workers": 2}
    folder.mkdir()
    (folder / "dagster.yaml").write_text(yaml.safe_dump(settings))
    return folder


def source_of(run: dg.DagsterRun) -> str | None:
    """The source a run normalizes: its job's (`<source>_normalize`), or its selected assets' (automation's runs)."""
    if run.job_name.endswith("_normalize"):
        return run.job_name.removesuffix("_normalize")
    return next(iter({k.path[0] for k in run.asset_selection or ()}), None)


def finished_runs(stack: Stack, source: str, count: int, timeout: float = 1200) -> list[dg.DagsterRun]:
    """The source's finished runs once there are `count` of them."""
    done = [dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED]
    until(stack, lambda: len([r for r in stack.instance.get_runs(filters=dg.RunsFilter(statuses=done))
                              if source_of(r) == source]) >= count, f"{count} finished runs of {source}", timeout)
    return [r for r in stack.instance.get_runs(filters=dg.RunsFilter(statuses=done)) if source_of(r) == source]


def until(stack: Stack, condition: Callable[[], bool], what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if stack.daemon.poll() is not None:
            raise AssertionError(f"dagster-daemon exited ({stack.daemon.returncode}):\n{stack.log_tail()}")
        if condition():
            return
        time.sleep(2)
    runs = stack.instance.get_runs()
    raise TimeoutError(f"{what} not seen in {timeout:.0f} s: {[(source_of(r), r.status.value) for r in runs]}\n"
                       f"{failures(stack.instance, runs)}\n--- daemon log (end) ---\n{stack.log_tail()}")


def event_times(instance: dg.DagsterInstance, run_id: str, kind: dg.DagsterEventType) -> float:
    return min((e.timestamp for e in instance.all_logs(run_id, of_type=kind)), default=math.inf)


def failures(instance: dg.DagsterInstance, runs: list[dg.DagsterRun]) -> str:
    """Each run that did not succeed: every error its event log holds (a failed step's, the run's), with the stack
    and the chained causes, so that a failure says why in the test's output."""
    found = []
    for run in runs:
        if run.status == dg.DagsterRunStatus.SUCCESS:
            continue
        found.append(f"run {run.run_id} ({source_of(run)}): {run.status.value}")
        for event in instance.all_logs(run.run_id):
            error = getattr(event.dagster_event.event_specific_data, "error", None) if event.dagster_event else None
            if error is not None:
                found.append(f"{event.dagster_event.event_type_value} in step {event.step_key}:\n{error.to_string()}")
    return "\n".join(found)


def orphaned_tables(warehouse: Path) -> set[str]:
    """Tables holding data files with rows that no commit added: what a commit attempt that lost its race leaves
    behind. (An empty write task leaves an empty file that Delta does not add either: not counted.)"""
    found = set()
    for log in warehouse.glob("*/*/_delta_log"):
        actions = [json.loads(line) for f in log.glob("*.json") for line in f.read_text().splitlines()]
        listed = {a[kind]["path"] for a in actions for kind in ("add", "remove") if kind in a}
        if any(pq.ParquetFile(p).metadata.num_rows for p in log.parent.rglob("*.parquet")
               if p.relative_to(log.parent).as_posix() not in listed):  # footers: metadata
            found.add(str(log.parent))
    return found


def registry_without_merge_counts(config_file: Path) -> list[tuple]:
    """The load registry's rows, less the run-time columns and the `rows` counts of MERGEd `_scd` tables and their
    current tables: those are the MERGE's own metrics (history rows of the keys a load touched, current keys whose
    version is the load's), which depend on which loads the history held already, so loads that ran in another
    order, or together in one pass, count other changes for the same resulting tables."""
    config = load_config(config_file)
    registry = read_table(build_spark_session(config.spark), config.table_path("shop", "_norm_loads"))
    registry = registry.withColumn("rows", F.map_filter("rows", lambda table, _: ~merge_metric(table)))
    registry = registry.drop("normalized_at", "table_versions")  # (versions: which run committed first)
    return sorted(tuple(map(repr, r)) for r in registry.collect())  # test: assert rows


def merge_metric(table: Column) -> Column:
    """Whether a table of the registry's `rows` is an `_scd` table or the current table beside one."""
    return table.endswith("_scd") | F.array_contains(F.map_keys("rows"), F.concat(table, F.lit("_scd")))


def workspace(folder: Path) -> Path:
    """The user's code location (`automation_location`), loaded from the repository."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "workspace.yaml").write_text(yaml.safe_dump({"load_from": [{"python_module": {
        "module_name": "tests.deploy.automation_location", "working_directory": str(REPO),
        "location_name": "lakenorm"}}]}))
    return folder / "workspace.yaml"


def daemon_config(folder: Path, catalog: str, landing: Path, engine: str) -> Path:
    """`shop` (runs of at most MAX_LOADS_PER_RUN loads, asked for by the landing sensor) and `auto` (Declarative
    Automation after its upstream asset), through the engine."""
    (landing / "auto").mkdir(parents=True)
    doc = {"warehouse": str(folder / "warehouse"), "spark": {"master": "local[2]", "remote": engine}, "sources": [
        {"name": "shop", "catalog": catalog, "landing": str(landing / "shop"), "max_loads_per_run": MAX_LOADS_PER_RUN},
        {"name": "auto", "catalog": catalog, "landing": str(landing / "auto"), "upstream": ["/".join(UPSTREAM)],
         "automation": "on_upstream"}]}
    folder.mkdir(parents=True)
    (folder / "lakenorm.yaml").write_text(yaml.safe_dump(doc))
    return folder / "lakenorm.yaml"


@pytest.fixture(scope="module")
def landed(tmp_path_factory) -> tuple[Path, str, list[str]]:
    """(folder, catalog, the load IDs of shop's packages, landed at once before the daemon starts)."""
    folder = tmp_path_factory.mktemp("daemon")
    catalog = str(write_catalog(folder / "catalog.json"))
    return folder, catalog, land_at_once(folder / "landing" / "shop", SPEC)


@pytest.fixture(scope="module")
def stack(landed, shared_engine) -> Iterator[Stack]:
    folder, catalog, _ = landed
    config = daemon_config(folder / "daemon", catalog, folder / "landing", shared_engine.address)
    home = dagster_home(folder / "dagster_home", max_concurrent_runs=2)
    pg_folder = Path(tempfile.mkdtemp(prefix="lakenorm-pg-"))  # under /tmp: the server's user must reach it
    with postgres(pg_folder) as server, pytest.MonkeyPatch.context() as env_patch:
        env = {**dagster_env(home, config, server.url), ENGINE_DIR_ENV: str(shared_engine.directory)}
        for name, value in env.items():
            env_patch.setenv(name, value)
        create_instance_tables(env)  # as `make stack-up` does
        with dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home))) as instance:
            log, served = folder / "daemon.log", runs_served(shared_engine.directory)
            daemon = start_dagster_daemon(workspace(folder / "workspace"), env, log)
            try:
                yield Stack(instance, daemon, log, config, shared_engine.directory, served)
            finally:
                stop(daemon.pid)


@pytest.mark.slow
def test_packages_landing_at_once_run_batched_and_side_by_side_under_the_daemon(stack, landed, spark, capsys):
    folder, catalog, load_ids = landed
    source = {"name": "shop", "catalog": catalog, "landing": str(folder / "landing" / "shop")}
    serial = write_config(folder / "serial", str(folder / "serial" / "warehouse"), source)
    for load_id in sorted(load_ids):  # in this process, while the daemon starts
        assert main(["--config", str(serial), "normalize", "--load-id", load_id]) == 0, capsys.readouterr().err
    runs = finished_runs(stack, "shop", 2)
    instance = stack.instance
    failed = failures(instance, runs)
    assert [r.status for r in runs] == [dg.DagsterRunStatus.SUCCESS] * 2, f"{failed}\n{stack.log_tail()}"
    shapes = {(r.tags.get(RANGE_START), r.tags.get(RANGE_END), r.tags.get("dagster/partition")) for r in runs}
    assert shapes == {(load_ids[0], load_ids[1], None), (None, None, load_ids[2])}  # in landing order
    assert {r.tags["dagster/sensor_name"] for r in runs} == {"shop_landing_sensor"}
    started = [event_times(instance, r.run_id, dg.DagsterEventType.STEP_START) for r in runs]
    ended = [event_times(instance, r.run_id, dg.DagsterEventType.RUN_SUCCESS) for r in runs]
    assert max(started) < min(ended), "every run's step started before the first run finished"
    assert runs_served(stack.engine) >= stack.served + 2, "each run held a lease on the engine"
    for table in ("_norm_raw_orders", "orders", "events"):  # every load's partition, each with its own load
        key = dg.AssetKey(["shop", table])
        assert instance.get_materialized_partitions(key) == set(load_ids), table
        for load_id in load_ids:
            (record,) = instance.fetch_materializations(
                dg.AssetRecordsFilter(asset_key=key, asset_partitions=[load_id]), limit=5).records
            assert record.asset_materialization.metadata["load_id"].value == load_id
    checked = instance.event_log_storage.get_asset_check_partition_info(
        [dg.AssetCheckKey(dg.AssetKey(["shop", "events"]), "rows_typed_per_load")])
    assert {(c.partition_key, c.latest_execution_status.value, c.is_current) for c in checked} == {
        (load_id, "SUCCEEDED", True) for load_id in load_ids}
    warnings = [e.user_message for r in runs for e in instance.all_logs(r.run_id)
                if e.level == 30 and "concurrent commit on" in e.user_message]

    read = write_config(folder / "read", str(folder / "daemon" / "warehouse"), source)  # this process's session
    serial_tables, daemon_tables = snapshot(serial), snapshot(read)
    assert set(daemon_tables) == set(serial_tables) and SAMPLE_TABLES <= set(serial_tables)
    for table in set(serial_tables) - {"_norm_loads"}:
        assert daemon_tables[table] == serial_tables[table], table
    assert registry_without_merge_counts(read) == registry_without_merge_counts(serial)

    retried = {RETRY.search(w).group(1).removeprefix("file:") for w in warnings}
    assert all(RETRY.search(w) for w in warnings), warnings
    assert orphaned_tables(folder / "daemon" / "warehouse") <= retried
    print(f"{len(warnings)} retried commit(s) on {len(retried)} table(s): {sorted(retried)}")


@pytest.mark.slow
def test_an_upstream_materialization_lands_packages_that_automation_normalizes_in_one_run(stack):
    instance = stack.instance
    until(stack, lambda: automation_ticked(instance, "auto_automation"), "a first tick of auto_automation", 600)
    two_packages = {"ops": {extract.op.name: {"config": {"packages": 2}}}}
    landed = dg.materialize([extract], instance=instance, run_config=two_packages)
    assert landed.success
    load_ids = sorted(p.name for p in load_config(stack.config).source("auto").landing.iterdir())
    (run,) = finished_runs(stack, "auto", 1)
    assert run.status == dg.DagsterRunStatus.SUCCESS, f"{failures(instance, [run])}\n{stack.log_tail()}"
    assert (run.tags[RANGE_START], run.tags[RANGE_END]) == (load_ids[0], load_ids[1])  # one run, both loads
    assert "dagster/backfill" in run.tags  # Declarative Automation's backfill, one run a range of loads
    assert instance.get_materialized_partitions(dg.AssetKey(["auto", "orders"])) == set(load_ids)
    assert instance.get_materialized_partitions(dg.AssetKey(["auto", "events"])) == set(load_ids)


def automation_ticked(instance: dg.DagsterInstance, name: str) -> bool:
    """Whether the automation condition sensor evaluated once (its first evaluation only starts its record: loads
    registered before it are not requested)."""
    states = [s for s in instance.all_instigator_state() if s.instigator_name == name]
    return any(instance.get_ticks(s.instigator_origin_id, s.selector_id, limit=1) for s in states)
