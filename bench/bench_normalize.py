"""Benchmark: lakenorm's normalization vs a bare `spark.read.json(files, schema)` -> Delta copy.

Both run in one process and one Spark session over the same nested-order packages:

    .venv/bin/python bench/bench_normalize.py --packages 10 --orders 100000 --out bench/out [--floor] [--peers]
    .venv/bin/python bench/bench_normalize.py ... --engine-port 15094   # the same, through a local engine

`--engine-port` starts a local engine (`lakenorm engine start`'s Spark Connect server, `local[2]`) on that
loopback port first, runs the copy and lakenorm's pass as its client, and stops it at the end (its start is not
timed: the engine outlives runs).

`--floor` also times, between the two, the least plain Spark does to write the same tables
(`spark_floor.py`): what any design on Spark pays before lakenorm's own guarantees. `--peers` then runs real
dlt (`peer_dlt.py`, orders appended to Delta) and DuckDB + delta-rs (`peer_duckdb.py`) as whole processes on
the same files. With `--floor` the session writes its event log, and the run ends with the phase table
(`phases.py`): the executors' task seconds and the wall seconds of the read pass, each table's write and the
registry, for the floor and lakenorm side by side.
Prints one Markdown table row per measurement; results go to BENCHMARKS.md by hand, with the command.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from pyspark.sql import SparkSession
from pyspark.sql import types as T

from normalization_core.configuration.config import load_config
from normalization_core.io.load_packages import discover_packages
from normalization_core.passes.normalize import normalize_load, normalize_loads
from normalization_core.runtime import engine
from normalization_core.runtime.spark import build_spark_session
from peers import run_peer
from phases import EVENT_LOG_CONF, READ_PASS, Phase, Run, events, phases
from phases import table as phase_rows
from lakenorm_app.samples import SampleSpec, sample_catalog, write_sample_packages
from spark_floor import FLOOR_TABLES, floor_run


def spark_type(schema: dict) -> T.DataType:
    """JSON Schema -> a Spark type for the bare reader (the reader's own typing, no lakenorm logic)."""
    types = schema.get("type", "string")
    kind = next((t for t in (types if isinstance(types, list) else [types]) if t != "null"), "string")
    if kind == "object" and "properties" in schema:
        return T.StructType([T.StructField(k, spark_type(v)) for k, v in schema["properties"].items()])
    if kind == "array" and "items" in schema:
        return T.ArrayType(spark_type(schema["items"]))
    if kind == "string" and schema.get("format") == "date-time":
        return T.TimestampType()
    return {"integer": T.LongType(), "number": T.DoubleType(), "boolean": T.BooleanType()}.get(kind, T.StringType())


def prepare(out: Path, spec: SampleSpec) -> Path:
    landing = out / "landing"
    marker = out / "spec.txt"
    if marker.is_file() and marker.read_text() == repr(spec):
        return landing
    shutil.rmtree(out, ignore_errors=True)
    landing.mkdir(parents=True)
    started = time.monotonic()
    write_sample_packages(landing, spec)
    print(f"generated {spec.packages} packages in {time.monotonic() - started:.0f} s")
    marker.write_text(repr(spec))
    return landing


def order_files(landing: Path) -> list[str]:
    return [str(p.path_of(f)) for p in discover_packages(landing, "shop").packages for f in p.stream_files["orders"]]


def orders_type() -> T.StructType:
    """The Spark type the bare copy (and the floor) read each order with."""
    return spark_type(next(s["stream"]["json_schema"] for s in sample_catalog()["streams"]
                           if s["stream"]["name"] == "orders"))


def bare_copy(spark: SparkSession, landing: Path, target: Path) -> float:
    files = order_files(landing)
    started = time.monotonic()
    spark.read.schema(orders_type()).json(files).write.format("delta").mode("overwrite").save(str(target))
    return time.monotonic() - started


def lakenorm_run(spark: SparkSession, config_file: Path, one_pass: bool) -> float:
    config = load_config(config_file)
    load_ids = [p.load_id for p in discover_packages(config.source("shop").landing, "shop").packages]
    started = time.monotonic()
    if one_pass:
        normalize_loads(spark, config, "shop", load_ids)
    else:
        for load_id in load_ids:
            normalize_load(spark, config, "shop", load_id)
    return time.monotonic() - started


def rows_per_table(spark: SparkSession, floor: Path, warehouse: Path) -> dict[str, tuple[int, int]]:
    """(lakenorm, floor) rows of each table both write (untimed): the floor must write what lakenorm writes."""
    def rows(path: Path) -> int:
        return spark.read.format("delta").load(str(path)).count()
    return {name: (rows(warehouse / name), rows(floor / name)) for name in FLOOR_TABLES}


@dataclass(frozen=True)
class Timings:
    bare: float
    lakenorm: float
    floor: float | None = None
    rows: dict[str, tuple[int, int]] = field(default_factory=dict)
    """(lakenorm, floor) rows per table, when the floor ran."""
    runs: tuple[Run, ...] = ()
    """When the floor and lakenorm ran, and where they wrote (for `phase_table`)."""


def run_benchmark(spark: SparkSession, spec: SampleSpec, out: Path, floor: bool = False,
                  one_pass: bool = True) -> Timings:
    """Generate the packages under `out` once, then time the bare copy, the floor (optional) and lakenorm."""
    landing = prepare(out, spec)
    for stale in ("bare", "floor", "warehouse"):
        shutil.rmtree(out / stale, ignore_errors=True)
    config_file = out / "lakenorm.yaml"
    config_file.write_text(yaml.safe_dump({"warehouse": "warehouse", "sources": [
        {"name": "shop", "landing": "landing", "catalog": str(out / "catalog.json"),
         "streams": {"orders": {"destination_sync_mode": "append"}}}]}))  # every record: no dedup MERGE
    (out / "catalog.json").write_text(json.dumps(sample_catalog()))
    bare = bare_copy(spark, landing, out / "bare")
    floor_started = _epoch_ms()
    floor_s = floor_run(spark, order_files(landing), orders_type(), out / "floor") if floor else None
    started = _epoch_ms()
    full = lakenorm_run(spark, config_file, one_pass=one_pass)
    runs = (Run("floor", floor_started, started, out / "floor", landing),
            Run("lakenorm", started, _epoch_ms(), out / "warehouse" / "shop", landing)) if floor else ()
    rows = rows_per_table(spark, out / "floor", out / "warehouse" / "shop") if floor else {}
    return Timings(bare, full, floor_s, rows, runs)


def _epoch_ms() -> int:
    return int(time.time() * 1000)


PHASE_ORDER = (READ_PASS, *FLOOR_TABLES, "registry")


def phase_table(event_log: Path, runs: tuple[Run, ...]) -> dict[str, dict[str, Phase]]:
    """Each run's phases (`phases.phases`), lakenorm's system tables (registry, schema versions) as one
    `registry` phase."""
    per_run = phases(events(event_log), list(runs))
    for per_phase in per_run.values():
        for name in [n for n in per_phase if n.startswith("_norm_") and n not in FLOOR_TABLES]:
            registry = per_phase.setdefault("registry", Phase())
            merged = per_phase.pop(name)
            registry.task_ms += merged.task_ms
            registry.intervals += merged.intervals
            registry.jobs += merged.jobs
    return per_run


def peers(out: Path) -> dict[str, tuple[float, dict]]:
    """Whole-process seconds and printed result of each peer on the benchmark's packages."""
    landing = out / "landing"
    return {"real dlt": run_peer("peer_dlt.py", landing, out / "peer_dlt", "--streams", "orders", "--merge", ""),
            "DuckDB + delta-rs": run_peer("peer_duckdb.py", landing, out / "peer_duckdb")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--packages", type=int, default=10)
    parser.add_argument("--orders", type=int, default=100_000, help="orders per package")
    parser.add_argument("--files", type=int, default=2, help="part files per stream and package")
    parser.add_argument("--out", type=Path, default=Path("bench/out"))
    parser.add_argument("--load-by-load", action="store_true",
                        help="normalize_load per load ID instead of one normalize_loads pass (as a backfill runs)")
    parser.add_argument("--floor", action="store_true", help="also time the plain-Spark floor (spark_floor.py)")
    parser.add_argument("--peers", action="store_true", help="then run real dlt and DuckDB on the same files")
    parser.add_argument("--events", type=Path, help="with --floor: keep the session's event log in this folder")
    parser.add_argument("--java-options", default="", help="driver JVM options, e.g. -XX:TieredStopAtLevel=1")
    parser.add_argument("--engine-port", type=int, help="run as the client of a local engine started on this port")
    args = parser.parse_args()
    spec = SampleSpec(packages=args.packages, orders=args.orders, customers=0, events=0, files_per_stream=args.files)
    jvm = {"spark.driver.extraJavaOptions": args.java_options} if args.java_options else {}
    settings = {"master": "local[2]", **jvm}
    event_log = args.events or Path(tempfile.mkdtemp(prefix="lakenorm-bench-events-"))  # (`prepare` empties `--out`)
    event_log.mkdir(parents=True, exist_ok=True)
    if args.floor:
        settings.update({**EVENT_LOG_CONF, "spark.eventLog.dir": str(event_log)})
    engine_dir = args.out.resolve() / "engine"
    if args.engine_port:
        started = time.monotonic()
        settings["remote"] = engine.start(settings, port=args.engine_port, directory=engine_dir).address
        print(f"engine started at {settings['remote']} in {time.monotonic() - started:.1f} s (not timed below)")
    try:
        spark = build_spark_session(settings, app_name="lakenorm-bench")
        t = run_benchmark(spark, spec, args.out.resolve(), floor=args.floor, one_pass=not args.load_by_load)
        spark.stop()
    finally:
        if args.engine_port:
            engine.stop(engine_dir)
    records = spec.packages * spec.orders
    machine = f"{os.cpu_count()} cores, {platform.processor() or platform.machine()}"
    print("| records | packages | bare copy s | lakenorm s | ratio | lakenorm rec/s | machine |")
    print(f"| {records:,} | {spec.packages} | {t.bare:.1f} | {t.lakenorm:.1f} | {t.lakenorm / t.bare:.2f} "
          f"| {records / t.lakenorm:,.0f} | {machine} |")
    if t.floor is not None:
        print(f"plain-Spark floor: {t.floor:.1f} s, {t.floor / t.bare:.2f}x the bare copy; "
              f"lakenorm {t.lakenorm / t.floor:.2f}x the floor")
        for table, (ours, floor_rows) in t.rows.items():
            print(f"{table}: {ours:,} rows (floor: {floor_rows:,})")
        if any(ours != floor_rows for ours, floor_rows in t.rows.values()):
            raise SystemExit("the floor did not write the rows lakenorm wrote: its time is not comparable")
        print("Per phase, from the session's event log (executors' task seconds; wall seconds while a job of "
              "the phase ran: phases written side by side overlap):")
        print("\n".join(phase_rows(phase_table(event_log, t.runs), PHASE_ORDER)))
    if args.events is None:
        shutil.rmtree(event_log, ignore_errors=True)
    if args.peers:
        for name, (seconds, printed) in peers(args.out.resolve()).items():
            print(f"{name}: {seconds:.1f} s whole process ({records / seconds:,.0f} rec/s); lakenorm's pass "
                  f"takes {t.lakenorm / seconds:.2f}x its time; rows {printed['rows']}")


if __name__ == "__main__":
    main()
