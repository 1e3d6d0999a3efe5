"""Concurrent runs under a real `dagster-daemon` on a PostgreSQL instance, each a client of one
Spark Connect engine as in the stack (`make stack-up`): two packages land at once, the landing sensor
requests two runs, the queue launches them side by side, both succeed, the tables equal a serial run of the classic
local session, and every Delta commit retried after a concurrent writer is a warning in its run's event log."""
from __future__ import annotations

import json
import math
import os
import re
import subprocess
import tempfile
import time
from pathlib import Path

import dagster as dg
import pyarrow.parquet as pq
import pytest
import yaml
from dagster._core.instance.ref import InstanceRef  # not exported by dagster 1.13
from pyspark.sql import functions as F

from deploy.services import create_instance_tables, dagster_env, postgres, start_dagster_daemon, stop
from lakenorm_app.commands import main
from lakenorm_app.samples import SampleSpec, write_catalog, write_sample_packages
from normalization_core.configuration.config import load_config
from normalization_core.io.engine import ENGINE_DIR_ENV
from normalization_core.io.engine_runs import runs_served
from normalization_core.io.delta import read_table
from normalization_core.io.spark import build_spark_session
from tests.normalization_core.table_snapshots import SAMPLE_TABLES, snapshot, write_config

REPO = Path(__file__).resolve().parents[2]
PACKAGES = 2  # two runs at once already commit to every table side by side
RETRY = re.compile(r"concurrent commit on (\S+) \(attempt (\d+) of \d+\)")


def land_at_once(landing: Path, spec: SampleSpec) -> list[str]:
    """Every package written aside, then each moved in complete: the sensor's first tick sees all of them."""
    staging = landing.parent / ".staging"
    load_ids = write_sample_packages(staging, spec)
    landing.mkdir(parents=True)
    for load_id in load_ids:
        os.replace(staging / load_id, landing / load_id)
    return load_ids


def dagster_home(folder: Path, max_concurrent_runs: int) -> Path:
    settings = yaml.safe_load((REPO / "deploy" / "dagster.local.yaml").read_text())
    # A local warehouse: runs of one source may commit side by side (the stack's one-per-source limit is for s3a://).
    settings["concurrency"]["runs"] = {"max_concurrent_runs": max_concurrent_runs}
    folder.mkdir()
    (folder / "dagster.yaml").write_text(yaml.safe_dump(settings))
    return folder


def finished_runs(instance: dg.DagsterInstance, count: int, timeout: float,
                  daemon: subprocess.Popen, log: Path) -> list[dg.DagsterRun]:
    done = [dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if daemon.poll() is not None:
            raise AssertionError(f"dagster-daemon exited ({daemon.returncode}):\n{log.read_text()[-3000:]}")
        runs = instance.get_runs(filters=dg.RunsFilter(statuses=done))
        if len(runs) >= count:
            return runs
        time.sleep(2)
    runs = instance.get_runs()
    raise TimeoutError(f"{count} finished runs not seen in {timeout:.0f} s: "
                       f"{[(r.tags.get('dagster/partition'), r.status.value) for r in runs]}\n{failures(instance, runs)}")


def event_times(instance: dg.DagsterInstance, run_id: str, kind: dg.DagsterEventType) -> float:
    return min((e.timestamp for e in instance.all_logs(run_id, of_type=kind)), default=math.inf)


def failures(instance: dg.DagsterInstance, runs: list[dg.DagsterRun]) -> str:
    """Each run that did not succeed: every error its event log holds (a failed step's, the run's), with the stack
    and the chained causes, so that a failure says why in the test's output."""
    found = []
    for run in runs:
        if run.status == dg.DagsterRunStatus.SUCCESS:
            continue
        found.append(f"run {run.run_id} (load {run.tags.get('dagster/partition')}): {run.status.value}")
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
    """The load registry's rows, less the run-time columns and the `rows` counts of MERGEd `_scd` tables: those are
    the MERGE's own metrics (rows inserted, updated, deleted), which depend on which loads the history held already,
    so loads that ran in another order count other changes for the same resulting table."""
    config = load_config(config_file)
    registry = read_table(build_spark_session(config.spark), config.table_path("shop", "_norm_loads"))
    registry = registry.withColumn("rows", F.map_filter("rows", lambda table, _: ~table.endswith("_scd")))
    registry = registry.drop("normalized_at", "table_versions")  # (versions: which run committed first)
    return sorted(tuple(map(repr, r)) for r in registry.collect())  # test: assert rows


@pytest.mark.slow
def test_packages_landing_at_once_run_concurrently_under_the_daemon(spark, shared_engine, tmp_path, monkeypatch,
                                                                    capsys):
    catalog = str(write_catalog(tmp_path / "catalog.json"))
    load_ids = land_at_once(tmp_path / "landing" / "shop",
                            SampleSpec(packages=PACKAGES, orders=6, customers=4, events=5, update_ratio=0.5))
    source = {"name": "shop", "catalog": catalog, "landing": str(tmp_path / "landing" / "shop")}
    serial = write_config(tmp_path / "serial", str(tmp_path / "serial" / "warehouse"), source)
    for load_id in sorted(load_ids):  # in this process, before the runs' drivers take the cores
        assert main(["--config", str(serial), "normalize", "--load-id", load_id]) == 0, capsys.readouterr().err
    config = write_config(tmp_path / "daemon", str(tmp_path / "daemon" / "warehouse"), source,
                          spark={"master": "local[2]", "remote": shared_engine.address})
    home = dagster_home(tmp_path / "dagster_home", max_concurrent_runs=PACKAGES)
    pg_folder = Path(tempfile.mkdtemp(prefix="lakenorm-pg-"))  # under /tmp: the server's user must reach it
    with postgres(pg_folder) as server:
        env = {**dagster_env(home, config, server.url), ENGINE_DIR_ENV: str(shared_engine.directory)}
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        create_instance_tables(env)  # as `make stack-up` does
        served = runs_served(shared_engine.directory)
        with dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home))) as instance:
            daemon = start_dagster_daemon(REPO / "workspace.yaml", env, tmp_path / "daemon.log")
            try:
                runs = finished_runs(instance, PACKAGES, 1200, daemon, tmp_path / "daemon.log")
                failed = failures(instance, runs)
                started = [event_times(instance, r.run_id, dg.DagsterEventType.STEP_START) for r in runs]
                ended = [event_times(instance, r.run_id, dg.DagsterEventType.RUN_SUCCESS) for r in runs
                         if r.status == dg.DagsterRunStatus.SUCCESS]
                warnings = [e.user_message for r in runs for e in instance.all_logs(r.run_id)
                            if e.level == 30 and "concurrent commit on" in e.user_message]
            finally:
                stop(daemon.pid)
    assert [r.status for r in runs] == [dg.DagsterRunStatus.SUCCESS] * PACKAGES, (
        f"{failed}\n--- daemon log (end) ---\n{(tmp_path / 'daemon.log').read_text()[-3000:]}")
    assert sorted(r.tags["dagster/partition"] for r in runs) == sorted(load_ids)
    assert {r.tags["dagster/sensor_name"] for r in runs} == {"shop_landing_sensor"}
    assert max(started) < min(ended), "every run's step started before the first run finished"
    assert runs_served(shared_engine.directory) >= served + PACKAGES, "each run held a lease on the engine"

    read = write_config(tmp_path / "read", str(tmp_path / "daemon" / "warehouse"), source)  # this process's session
    serial_tables, daemon_tables = snapshot(serial), snapshot(read)
    assert set(daemon_tables) == set(serial_tables) and SAMPLE_TABLES <= set(serial_tables)
    for table in set(serial_tables) - {"_norm_loads"}:
        assert daemon_tables[table] == serial_tables[table], table
    assert registry_without_merge_counts(read) == registry_without_merge_counts(serial)

    retried = {RETRY.search(w).group(1).removeprefix("file:") for w in warnings}
    assert all(RETRY.search(w) for w in warnings), warnings
    assert orphaned_tables(tmp_path / "daemon" / "warehouse") <= retried
    print(f"{len(warnings)} retried commit(s) on {len(retried)} table(s): {sorted(retried)}")
