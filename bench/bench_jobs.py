"""Spark jobs per normalize pass of the sample packages, grouped by what they do (Delta's job descriptions,
else the stage's call site), read from Spark's event log. Job counts do not depend on the machine's load:
each job costs a roughly fixed ~0.2-0.3 s on 2 cores, which is what a small load's time is made of. Also the
processes started during each pass (the machine's fork counter: run it on a quiet machine), which are Hadoop's
`chmod`/`readlink` calls for local files.

    python bench/bench_jobs.py [--packages 3] [--out bench/out_jobs]
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import time
from pathlib import Path

from lakenorm_app.samples import SampleSpec, write_catalog, write_sample_packages
from normalization_core.configuration.config import parse_config
from normalization_core.passes.normalize import normalize_loads
from normalization_core.runtime.spark import build_spark_session


def processes_started() -> int:
    """Processes this machine has started since boot (`/proc/stat`)."""
    with open("/proc/stat", encoding="ascii") as stat:
        return next(int(line.split()[1]) for line in stat if line.startswith("processes "))


def cpu_seconds() -> tuple[float, float]:
    """(busy, stolen): CPU seconds this machine's cores have spent working (user, nice, system, irq, softirq) and
    lost to the hypervisor (steal) since boot (`/proc/stat`). On a shared host, steal slows wall-clock figures
    while busy seconds stay what the work costs."""
    with open("/proc/stat", encoding="ascii") as stat:
        fields = [int(v) for v in next(line for line in stat if line.startswith("cpu ")).split()[1:]]
    tick = os.sysconf("SC_CLK_TCK")
    return sum(fields[i] for i in (0, 1, 2, 5, 6)) / tick, fields[7] / tick


def run_passes(out: Path, packages: int, conf: dict[str, str] | None = None
               ) -> list[tuple[str, float, range, int]]:
    """Normalizes each sample package in its own pass; (load ID, seconds, job IDs, processes started) per pass."""
    shutil.rmtree(out, ignore_errors=True)
    (out / "landing").mkdir(parents=True)
    (out / "events").mkdir()
    write_catalog(out / "catalog.json")
    ids = write_sample_packages(out / "landing", SampleSpec(packages=packages, orders=50, customers=20, events=40))
    config = parse_config({"warehouse": "wh", "sources": [
        {"name": "shop", "landing": "landing", "catalog": "catalog.json"}]}, base_dir=out)
    spark = build_spark_session({"master": "local[2]", "spark.eventLog.enabled": "true",
                                 "spark.eventLog.compress": "false", "spark.eventLog.dir": str(out / "events"), **(conf or {})},
                                "lakenorm-bench-jobs")
    scheduler = spark.sparkContext._jsc.sc().dagScheduler()
    passes = []
    try:
        for load_id in ids:
            first, forks, started = scheduler.numTotalJobs(), processes_started(), time.monotonic()
            normalize_loads(spark, config, "shop", [load_id])
            passes.append((load_id, time.monotonic() - started, range(first, scheduler.numTotalJobs()),
                           processes_started() - forks))
    finally:
        spark.stop()
    return passes


def jobs_by_kind(event_log: Path, jobs: range) -> collections.Counter:
    kinds: collections.Counter = collections.Counter()
    with event_log.open(encoding="utf-8") as events:
        for line in events:
            event = json.loads(line)
            if event["Event"] == "SparkListenerJobStart" and event["Job ID"] in jobs:
                description = (event.get("Properties", {}).get("spark.job.description") or "").removeprefix("Delta: ")
                stages = event["Stage Infos"]
                site = stages[-1]["Stage Name"].split(" at ")[0] if stages else "?"
                kinds[description.split(" - ")[0][:60] or site] += 1
    return kinds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packages", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("bench/out_jobs"))
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting for the session (to measure what it changes), repeatable")
    args = parser.parse_args()
    passes = run_passes(args.out, args.packages, dict(c.split("=", 1) for c in args.conf))
    event_log = sorted((args.out / "events").rglob("events_*"))[0]  # Spark 4 writes event log v2 folders
    for load_id, seconds, jobs, processes in passes:
        print(f"pass {load_id}: {len(jobs)} jobs, {seconds:.1f} s, {processes} processes started")
        for kind, count in jobs_by_kind(event_log, jobs).most_common():
            print(f"  {count:4d}  {kind}")


if __name__ == "__main__":
    main()
