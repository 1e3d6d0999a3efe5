"""Benchmark: a small load through a real Dagster daemon, from the landing sensor's tick to the last table.

    .venv/bin/python bench/bench_dagster_run.py [--records 1000] [--out bench/out_dagster]

The demo's files (catalog, configuration, Dagster home with lakenorm's dagster.yaml) are written under `out`
with one sample package (3 streams x `--records`), then `dagster-daemon run` is started on the repository's
workspace. Its landing sensor registers the package and requests a run; the run queue launches it in its own
process; the step starts Spark and writes every table. A second package is landed after the first run and
goes the same way (its MERGEs read the first one's history). For each run, times from the instance's own
records: the sensor tick, run created, run started (process up, code location loaded), step started, last
asset materialized, run finished. The daemon is stopped at the end.
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import yaml
from dagster._core.definitions.run_request import InstigatorType  # not exported by dagster 1.13

from lakenorm_app.demo import SOURCE, land_missing_packages, write_demo_files
from lakenorm_app.samples import SampleSpec
from normalization_core.configuration.config import load_config
from normalization_core.runtime import engine

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "bench"
EVENTS = {"run started": dg.DagsterEventType.RUN_START, "step started": dg.DagsterEventType.STEP_START,
          "last table": dg.DagsterEventType.ASSET_MATERIALIZATION, "run finished": dg.DagsterEventType.RUN_SUCCESS}


def spec(records: int, packages: int) -> SampleSpec:
    return SampleSpec(packages=packages, orders=records, customers=records, events=records)


def start_daemon(root: Path) -> subprocess.Popen:
    home = root / "dagster_home"
    env = {**os.environ, "DAGSTER_HOME": str(home), "LAKENORM_CONFIG": str(root / "lakenorm.yaml")}
    daemon = str(Path(sys.executable).parent / "dagster-daemon")
    log = open(root / "daemon.log", "w")  # noqa: SIM115 - closed with the process
    return subprocess.Popen([daemon, "run", "-w", str(REPO / "workspace.yaml")], cwd=home, env=env,
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def start_engine(config: Path, root: Path, port: int) -> None:
    """The configuration's runs made clients of an engine started now (`lakenorm engine start`); the daemon's runs
    inherit `LAKENORM_ENGINE_DIR` (their leases)."""
    settings = yaml.safe_load(config.read_text())
    settings["spark"]["remote"] = f"sc://127.0.0.1:{port}"
    config.write_text(yaml.safe_dump(settings, sort_keys=False))
    os.environ[engine.ENGINE_DIR_ENV] = str(root / "engine")
    started = time.monotonic()
    engine.start(load_config(config).spark, port=port)
    print(f"engine cold start: {time.monotonic() - started:.1f} s", flush=True)


def wait_for_runs(instance: dg.DagsterInstance, count: int, timeout: float) -> list[dg.RunRecord]:
    done = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        records = instance.get_run_records(filters=dg.RunsFilter(statuses=list(done)))
        if len(records) >= count:
            return sorted(records, key=lambda r: r.create_timestamp.timestamp())
        time.sleep(1)
    raise TimeoutError(f"{count} finished run(s) not seen within {timeout:.0f} s")


def tick_times(instance: dg.DagsterInstance) -> dict[str, float]:
    """Run ID -> timestamp of the sensor tick that requested it."""
    found = {}
    for state in instance.all_instigator_state(instigator_type=InstigatorType.SENSOR):
        for tick in instance.get_ticks(state.instigator_origin_id, state.selector_id, limit=50):
            found.update({run_id: tick.timestamp for run_id in tick.run_ids})
    return found


def run_times(instance: dg.DagsterInstance, record: dg.RunRecord, ticked: float | None) -> dict[str, float]:
    """Seconds after the tick (or after the run's creation when no tick is found) of each moment of a run."""
    logs = instance.all_logs(record.dagster_run.run_id, of_type=set(EVENTS.values()))
    start = ticked if ticked is not None else record.create_timestamp.timestamp()
    times = {"run created": record.create_timestamp.timestamp() - start}
    for what, kind in EVENTS.items():
        stamps = [e.timestamp for e in logs if e.dagster_event_type == kind]
        if stamps:
            times[what] = (max(stamps) if what == "last table" else min(stamps)) - start
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1000, help="records per stream and package")
    parser.add_argument("--out", type=Path, default=BENCH / "out_dagster")
    parser.add_argument("--timeout", type=float, default=900, help="seconds to wait for each run")
    parser.add_argument("--java-options", default="", help="the runs' driver JVM options, e.g. "
                        "'-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m'")
    parser.add_argument("--engine-port", type=int, help="runs through an engine (Spark Connect) started on this "
                        "loopback port for the benchmark and stopped after it (its cold start printed)")
    args = parser.parse_args()
    root = args.out.resolve()
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    config = write_demo_files(root, spec(args.records, 1))
    if args.java_options:
        settings = yaml.safe_load(config.read_text())
        settings["spark"]["spark.driver.extraJavaOptions"] = args.java_options
        config.write_text(yaml.safe_dump(settings, sort_keys=False))
    os.environ["DAGSTER_HOME"] = str(root / "dagster_home")
    if args.engine_port:
        start_engine(config, root, args.engine_port)
    with dg.DagsterInstance.get():  # its storage created here: the daemon's code server creating it at the same
        pass                        # time failed with alembic's "more than one head" (no run then)
    daemon = start_daemon(root)
    try:
        with dg.DagsterInstance.get() as instance:
            records = wait_for_runs(instance, 1, args.timeout)
            land_missing_packages(root / "landing" / SOURCE, spec(args.records, 2))
            records = wait_for_runs(instance, 2, args.timeout)
            ticks = tick_times(instance)
            rows = [(r, run_times(instance, r, ticks.get(r.dagster_run.run_id))) for r in records]
    finally:
        os.killpg(daemon.pid, signal.SIGTERM)
        daemon.wait(timeout=60)
        if args.engine_port:
            engine.stop()
    columns = ["run created", *EVENTS]
    jvm = f", JVM options `{args.java_options}`" if args.java_options else ""
    jvm += f", through the engine at port {args.engine_port}" if args.engine_port else ""
    print(f"| run ({args.records:,} records per stream, {os.cpu_count()} cores{jvm}) | status | "
          + " | ".join(f"{c} s" for c in columns) + " |")
    print("|---|---|" + "---|" * len(columns))
    for n, (record, times) in enumerate(rows, 1):
        cells = " | ".join(f"{times[c]:.1f}" if c in times else "-" for c in columns)
        print(f"| package {n}, seconds after the sensor tick | {record.dagster_run.status.value} | {cells} |")


if __name__ == "__main__":
    main()
