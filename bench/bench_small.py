"""Benchmark: a small load (3 streams x ~1,000 records, like the demo's) end to end, beside real peers.

    .venv/bin/python bench/bench_small.py [--records 1000] [--out bench/out_small]

Two sample packages (the demo's catalog: `orders` and `customers` append_dedup, `events` append) are
generated once. Then, one after another on the same files:
- lakenorm, whole `lakenorm normalize` process from cold, for the first package and then the second
  (its `append_dedup` writes read the first one's history);
- lakenorm in a warm session (Spark's event log on): the first package untimed, then the second, with the Spark
  jobs (and Delta's log replays among them), Delta commits, data files and processes (the machine's fork
  counter: Hadoop's `chmod`/`readlink`) it started;
- lakenorm through the engine (`spark: {remote: ...}`): the engine's cold start (`lakenorm engine
  start`, once per machine), a warm-up of both packages into a warehouse of its own, then the whole `lakenorm
  normalize` client process for the first package into a fresh warehouse and then the second; the engine is
  stopped at the end;
- real dlt (`bench/peer_dlt.py`), whole process, the first package, Delta tables, `merge` for the dedup streams;
- DuckDB + delta-rs (`bench/peer_duckdb.py`), whole process, the first package's four order tables.
Prints a Markdown table; results go to BENCHMARKS.md by hand, with the command.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from normalization_core.configuration.config import load_config
from normalization_core.io.load_packages import discover_packages
from normalization_core.passes.normalize import normalize_load
from normalization_core.runtime import engine
from normalization_core.runtime.spark import build_spark_session
from bench_jobs import jobs_by_kind, processes_started
from peers import BENCH, run_peer, timed_process
from lakenorm_app.samples import SampleSpec, write_catalog, write_sample_packages


@dataclass(frozen=True)
class Measure:
    what: str
    seconds: float
    detail: str = ""


def prepare(out: Path, records: int) -> tuple[Path, list[str]]:
    """Two packages under `out/landing` (generated once per size) and a config per warehouse."""
    spec = SampleSpec(packages=2, orders=records, customers=records, events=records)
    landing = out / "landing"
    marker = out / "spec.txt"
    if not (marker.is_file() and marker.read_text() == repr(spec)):
        shutil.rmtree(out, ignore_errors=True)
        landing.mkdir(parents=True)
        write_sample_packages(landing, spec)
        write_catalog(out / "catalog.json")
        marker.write_text(repr(spec))
    load_ids = [p.load_id for p in discover_packages(landing, "shop").packages]
    first = out / "landing_first"  # the first package alone, for the peers
    shutil.rmtree(first, ignore_errors=True)
    first.mkdir()
    (first / load_ids[0]).symlink_to(landing / load_ids[0])
    return landing, load_ids


def config_file(out: Path, name: str, java_options: str = "", remote: str | None = None) -> Path:
    path = out / f"{name}.yaml"
    shutil.rmtree(out / name, ignore_errors=True)
    spark = {"master": "local[2]", **({"spark.driver.extraJavaOptions": java_options} if java_options else {}),
             **({"remote": remote} if remote else {})}
    path.write_text(yaml.safe_dump({"warehouse": name, "sources": [
        {"name": "shop", "landing": "landing", "catalog": "catalog.json"}], "spark": spark}))
    return path


def lakenorm_cold(out: Path, load_ids: list[str], java_options: str) -> list[Measure]:
    config = config_file(out, "cold", java_options)
    lakenorm = str(Path(sys.executable).parent / "lakenorm")
    measures = []
    for n, load_id in enumerate(load_ids, 1):
        seconds, _ = timed_process([lakenorm, "--config", str(config), "normalize", "--load-id", load_id])
        measures.append(Measure(f"lakenorm normalize, whole process, package {n}", seconds))
    return measures


def lakenorm_engine(out: Path, load_ids: list[str], port: int) -> list[Measure]:
    """The engine's cold start, then whole client processes against it once warm (see the module's text)."""
    lakenorm = str(Path(sys.executable).parent / "lakenorm")
    os.environ[engine.ENGINE_DIR_ENV] = str(out / "engine")
    warmup = config_file(out, "engine_warmup", remote=f"sc://127.0.0.1:{port}")
    engine.stop()
    try:
        seconds, printed = timed_process([lakenorm, "--config", str(warmup), "engine", "start"])
        measures = [Measure("engine cold start (`lakenorm engine start`, once per machine)", seconds, printed.strip()
                            .split(" (")[0])]
        for n, load_id in enumerate(load_ids, 1):
            seconds, _ = timed_process([lakenorm, "--config", str(warmup), "normalize", "--load-id", load_id])
            measures.append(Measure(f"lakenorm normalize through the fresh engine, warm-up, package {n}", seconds))
        config = config_file(out, "engine_warm", remote=f"sc://127.0.0.1:{port}")
        for n, load_id in enumerate(load_ids, 1):
            seconds, _ = timed_process([lakenorm, "--config", str(config), "normalize", "--load-id", load_id])
            measures.append(Measure(f"lakenorm normalize client process, warm engine, package {n}", seconds,
                                    f"{delta_commits(out / 'engine_warm')} Delta commits so far"))
    finally:
        engine.stop()
    return measures


def delta_commits(warehouse: Path) -> int:
    return sum(1 for _ in warehouse.glob("*/*/_delta_log/*.json"))


def data_files(warehouse: Path) -> int:
    """Parquet files of the tables' data (not of their logs' checkpoints)."""
    return sum(1 for path in warehouse.glob("*/*/**/*.parquet") if "_delta_log" not in path.parts)


def lakenorm_warm(out: Path, load_ids: list[str], java_options: str) -> Measure:
    config = load_config(config_file(out, "warm", java_options))
    events = out / "warm_events"
    shutil.rmtree(events, ignore_errors=True)
    events.mkdir(parents=True)
    spark = build_spark_session({**config.spark, "spark.eventLog.enabled": "true", "spark.eventLog.compress": "false",
                                 "spark.eventLog.dir": str(events)}, app_name="lakenorm-bench-small")
    try:
        normalize_load(spark, config, "shop", load_ids[0])
        before = (_jobs(spark), delta_commits(out / "warm"), data_files(out / "warm"), processes_started())
        started = time.monotonic()
        normalize_load(spark, config, "shop", load_ids[1])
        seconds = time.monotonic() - started
        after = (_jobs(spark), delta_commits(out / "warm"), data_files(out / "warm"), processes_started())
    finally:
        spark.stop()
    jobs, commits, files, processes = (a - b for a, b in zip(after, before))
    kinds = jobs_by_kind(sorted(events.rglob("events_*"))[0], range(before[0], after[0]))  # after stop: all flushed
    replays = sum(n for kind, n in kinds.items() if kind.startswith("Compute snapshot"))
    return Measure("lakenorm, warm session, package 2", seconds,
                   f"{jobs} Spark jobs ({replays} of them Delta log replays), {commits} Delta commits, {files} data "
                   f"files, {processes} processes started")


def _jobs(spark) -> int:
    return spark.sparkContext._jsc.sc().dagScheduler().numTotalJobs()


def peers(out: Path) -> list[Measure]:
    first = out / "landing_first"
    measures = []
    for name, script in (("real dlt", "peer_dlt.py"), ("DuckDB + delta-rs (4 order tables)", "peer_duckdb.py")):
        seconds, printed = run_peer(script, first, out / f"peer_{script.removesuffix('.py')}")
        measures.append(Measure(f"{name}, whole process, package 1", seconds, f"{sum(printed['rows'].values()):,} rows"))
    return measures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1000, help="records per stream and package")
    parser.add_argument("--out", type=Path, default=BENCH / "out_small")
    parser.add_argument("--java-options", default="", help="lakenorm's driver JVM options, e.g. -XX:TieredStopAtLevel=1")
    parser.add_argument("--no-peers", action="store_true", help="lakenorm only")
    parser.add_argument("--engine-port", type=int, default=15092, help="the benchmark's engine's port (loopback)")
    parser.add_argument("--no-engine", action="store_true", help="not through the engine")
    args = parser.parse_args()
    out = args.out.resolve()
    landing, load_ids = prepare(out, args.records)
    measures = [*lakenorm_cold(out, load_ids, args.java_options), lakenorm_warm(out, load_ids, args.java_options),
                *([] if args.no_engine else lakenorm_engine(out, load_ids, args.engine_port)),
                *([] if args.no_peers else peers(out))]
    jvm = f", JVM options `{args.java_options}`" if args.java_options else ""
    print(f"| measure ({args.records:,} records per stream, {os.cpu_count()} cores{jvm}) | s | detail |")
    print("|---|---|---|")
    for m in measures:
        print(f"| {m.what} | {m.seconds:.1f} | {m.detail} |")


if __name__ == "__main__":
    main()
