"""Benchmark: many small packages landing at once under a real Dagster daemon, every run a client of a local engine.

    .venv/bin/python bench/bench_batched_runs.py [--packages 20] [--records 100] [--max-loads-per-run 50]

The demo's files are written under `--out` (its configuration names an engine on a free loopback port, started for
the benchmark and stopped after it), then `dagster-daemon run` on the repository's workspace and lakenorm's local
instance settings (SQLite, one run at a time). A first package warms the engine and the daemon's code location
(not measured); then one package lands (the reference) and then `--packages` packages land at once (moved in
complete, so one sensor tick sees them all). For each, the time from the landing sensor's tick that registered the
packages to the last table materialized by the runs it asked for (one run per `max_loads_per_run` loads), and how
many runs that took. The goal: the many within 2x the one. `--max-loads-per-run 1` runs each load on its own (the
shape of one run per load ID).
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import signal
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path

import dagster as dg
import yaml

from bench_dagster_run import start_daemon, tick_times
from lakenorm_app.demo import SOURCE, land_missing_packages, write_demo_files
from lakenorm_app.samples import SampleSpec
from normalization_core.configuration.config import load_config
from normalization_core.runtime import engine

REPO = Path(__file__).resolve().parents[1]
DONE = [dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED]


def spec(records: int, packages: int) -> SampleSpec:
    return SampleSpec(packages=packages, orders=records, customers=records, events=records)


def land(root: Path, records: int, total: int, instance: dg.DagsterInstance, timeout: float) -> tuple[float, int]:
    """Land packages up to `total`; once every new load's run finished: (seconds from the sensor tick that
    registered them to the runs' last table materialization, how many runs)."""
    before = {r.run_id for r in instance.get_runs()}
    new = land_missing_packages(root / "landing" / SOURCE, spec(records, total))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        registered = set(instance.get_dynamic_partitions(f"{SOURCE}_load_ids"))
        runs = [r for r in instance.get_runs() if r.run_id not in before]
        if set(new) <= registered and runs and all(r.status in DONE for r in runs) and covered(instance, new):
            break
        time.sleep(1)
    else:
        raise TimeoutError(f"the runs of {len(new)} package(s) did not finish within {timeout:.0f} s")
    failed = [r.run_id for r in runs if r.status != dg.DagsterRunStatus.SUCCESS]
    if failed:
        raise RuntimeError(f"runs failed: {failed}")
    ticks = tick_times(instance)
    ticked = min(ticks[r.run_id] for r in runs)
    last = max(e.timestamp for r in runs
               for e in instance.all_logs(r.run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION))
    return last - ticked, len(runs)


def covered(instance: dg.DagsterInstance, load_ids: list[str]) -> bool:
    """Every load's raw orders partition is materialized (the runs asked for all of them)."""
    return set(load_ids) <= instance.get_materialized_partitions(dg.AssetKey([SOURCE, "_norm_raw_orders"]))


def machine() -> str:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, commit {commit.stdout.strip() or '?'}, "
            f"{platform.machine()} {os.cpu_count()} cores, {memory:.0f} GiB, load average {load} at the end")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--packages", type=int, default=20, help="packages landing at once")
    parser.add_argument("--records", type=int, default=100, help="records per stream and package")
    parser.add_argument("--max-loads-per-run", type=int, default=50, help="the source's max_loads_per_run")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "out_batched")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds to wait for each landing's runs")
    args = parser.parse_args()
    root = args.out.resolve()
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    config_file = write_demo_files(root, spec(args.records, 0))  # packages land once the daemon runs
    settings = yaml.safe_load(config_file.read_text())
    settings["sources"][0]["max_loads_per_run"] = args.max_loads_per_run
    config_file.write_text(yaml.safe_dump(settings, sort_keys=False))
    config = load_config(config_file)
    os.environ["DAGSTER_HOME"] = str(root / "dagster_home")
    os.environ[engine.ENGINE_DIR_ENV] = str(root / "engine")  # the daemon's runs inherit it (their leases)
    host, port = engine.engine_address(config.spark)
    started = time.monotonic()
    engine.start(config.spark, host=host, port=port)
    print(f"engine cold start: {time.monotonic() - started:.1f} s", flush=True)
    with dg.DagsterInstance.get():  # its storage created before the daemon's code server would
        pass
    daemon = start_daemon(root)
    try:
        with dg.DagsterInstance.get() as instance:
            warm, _ = land(root, args.records, 1, instance, args.timeout)
            print(f"warm-up package: {warm:.1f} s", flush=True)
            one, one_runs = land(root, args.records, 2, instance, args.timeout)
            print(f"1 package: {one:.1f} s", flush=True)
            many, many_runs = land(root, args.records, 2 + args.packages, instance, args.timeout)
    finally:
        os.killpg(daemon.pid, signal.SIGTERM)
        daemon.wait(timeout=60)
        engine.stop()
    print(f"| landing ({args.records:,} records per stream and package, max_loads_per_run "
          f"{args.max_loads_per_run}) | runs | sensor tick to last table s |")
    print("|---|---|---|")
    print(f"| 1 package | {one_runs} | {one:.1f} |")
    print(f"| {args.packages} packages at once | {many_runs} | {many:.1f} ({many / one:.2f}x) |")
    print(machine())


if __name__ == "__main__":
    main()
