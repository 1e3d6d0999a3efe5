"""Benchmark: what a wide load costs: a stream of `--columns` columns nested `--depth` deep and 100 real
GitHub events (dlt's test page: hundreds of columns, 7 tables), each its own load under `dlt` without a catalog.

    PYTHONPATH=$PWD .venv/bin/python bench/bench_wide.py [--columns 1000] [--depth 8] [--records 20] \
        [--out bench/out_wide]

For each stream:
- `lakenorm normalize --load-id`, whole process from cold, started as lakenorm starts it for a small input
  (the quick compiler);
- then, in one warm session (full JIT) on that run's raw table and stored schema, the parts of a pass that grow
  with the width: the schema's inference (`observed_types`: one job, two for records nested deeper than four
  levels), building the typed tables' DataFrames (driver only: Python builds every column through py4j and Spark
  analyzes the plans), and running them (`noop` writes: parse, typing, meta).
Prints a Markdown table; results go to BENCHMARKS.md by hand, with the command.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

from pyspark.sql import functions as F

from normalization_core.configuration.config import load_config
from normalization_core.io.delta import read_table
from normalization_core.io.versions import latest_versions_without_spark
from normalization_core.plans.source_tables import SourceTables
from normalization_core.runtime.spark import build_spark_session
from normalization_core.transform.nesting import typed_tables
from normalization_core.transform.observed_kinds import observed_types
from normalization_core.transform.parse import parse_records
from peers import BENCH, timed_process
from tests.normalization_core.dlt_peer import write_package
from tests.normalization_core.table_snapshots import write_config
from tests.normalization_core.wide_records import deep_record, github_events

LOAD_ID = "1700000000.1"


def prepare(out: Path, stream: str, records: list[dict]) -> Path:
    """A landing with one package of `stream` and a configuration (a fresh warehouse) under `out/<stream>`."""
    folder = out / stream
    shutil.rmtree(folder, ignore_errors=True)
    config = write_config(folder, "warehouse", {"name": "wide", "landing": "landing", "convention": "dlt"},
                          spark={"master": "local[2]", "spark.driver.memory": "4g"})
    write_package(folder / "landing", LOAD_ID, "2023-11-14T22:13:20Z", {stream: records}, source="wide")
    return config


def cold(config: Path) -> float:
    lakenorm = str(Path(sys.executable).parent / "lakenorm")
    seconds, _ = timed_process([lakenorm, "--config", str(config), "normalize", "--load-id", LOAD_ID])
    return seconds


def parts(spark, config_file: Path, stream: str) -> dict[str, float | int]:
    """Seconds of inference, of building the typed DataFrames (driver) and of running them, warm."""
    config = load_config(config_file)
    tables = SourceTables.of(config, "wide")
    names = tables.names
    raw = read_table(spark, tables.raw_path(stream)).persist()
    raw.count()
    started = time.monotonic()
    observed = observed_types(raw, names, epochs="timestamp" in tables.source.settings.detections)
    inferred = time.monotonic() - started
    schema = latest_versions_without_spark(tables.versions_path, tables.storage_options(tables.versions_path))[
        stream].schema
    started = time.monotonic()
    parsed = parse_records(raw, names, schema)
    frames = typed_tables(parsed, names, schema, normalized_at=F.current_timestamp())
    for df in frames.values():
        df.schema  # noqa: B018 - analysis, on the driver
    built = time.monotonic() - started
    started = time.monotonic()
    for df in frames.values():
        df.write.format("noop").mode("overwrite").save()
    ran = time.monotonic() - started
    raw.unpersist()
    columns = sum(len(t["columns"]) for t in schema["tables"])
    return {"paths": len(observed), "tables": len(frames), "columns": columns, "infer": inferred, "build": built,
            "run": ran}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--columns", type=int, default=1000)
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--records", type=int, default=20, help="records of the deep stream")
    parser.add_argument("--out", type=Path, default=BENCH / "out_wide")
    args = parser.parse_args()
    out = args.out.resolve()
    streams = {"deep": [deep_record(i, args.columns, args.depth) for i in range(args.records)],
               "events": github_events()}
    configs = {stream: prepare(out, stream, records) for stream, records in streams.items()}
    whole = {stream: cold(config) for stream, config in configs.items()}
    spark = build_spark_session(load_config(configs["deep"]).spark, app_name="lakenorm-bench-wide")
    try:
        parts(spark, configs["deep"], "deep")  # untimed: the JVM's own warm-up
        measured = {stream: parts(spark, config, stream) for stream, config in configs.items()}
    finally:
        spark.stop()
    print(f"| stream ({os.cpu_count()} cores) | records | tables | data columns | whole process, cold, s "
          "| warm: inference, s | warm: build DataFrames (driver), s | warm: run (noop writes), s |")
    print("|---|---|---|---|---|---|---|---|")
    labels = {"deep": f"{args.columns} columns nested {args.depth} deep", "events": "real GitHub events"}
    for stream, m in measured.items():
        print(f"| {labels[stream]} | {len(streams[stream])} | {m['tables']} | {m['columns']} | {whole[stream]:.1f} "
              f"| {m['infer']:.1f} | {m['build']:.1f} | {m['run']:.1f} |")


if __name__ == "__main__":
    main()
