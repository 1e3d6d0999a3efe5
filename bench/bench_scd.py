"""Benchmark: applying one update package to an `append_dedup` stream costs O(k + history of touched keys).

In one Spark session, for each history size it builds the stream's history and current tables with Spark
ranges (no files: `--versions` versions per key, as one rebuild, which writes them in their order), then applies
the same package of `--updates` new versions (keys spread over the smallest key space, or with `--spread` over
each history's own) with the incremental path (a replaceWhere of the touched keys' range per table since 6af9f45; a
MERGE before), and prints the update times and their ratio. A ratio near 1 means the cost does not grow with the
table; it also prints how many files the update rewrote or marked.
Each size runs with deletion vectors off and on (`--deletion-vectors`), printing the Spark jobs and wall time
of the update and the machine's load average (the figures are only comparable on a quiet machine).

    .venv/bin/python bench/bench_scd.py --keys 100000 1000000 --updates 10000 --out bench/out/scd
    .venv/bin/python bench/bench_scd.py --keys 100000 1000000 --spread --deletion-vectors off --out bench/out/scd
    .venv/bin/python bench/bench_scd.py --keys 100000 1000000 --children --deletion-vectors off  # + a child table
    .venv/bin/python bench/bench_scd.py --keys 1000 10000 --updates 100      # toy size, a minute
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from pathlib import Path

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from normalization_core.columns import NATIVE as N
from normalization_core.configuration.catalog import parse_catalog
from normalization_core.configuration.config import LakenormConfig, parse_config
from normalization_core.dispositions.append_dedup import rebuild_dedup_tables, write_dedup_tables
from normalization_core.plans.source_tables import SourceTables
from normalization_core.plans.stream_plans import StreamPlan
from normalization_core.runtime.spark import build_spark_session
from normalization_core.schema import schema_from_json_schema
from normalization_core.transform import raw as R

STREAM = "accounts"
SCHEMA = {"type": "object", "properties": {
    "id": {"type": "integer"}, "seq": {"type": "integer"},
    "name": {"type": ["null", "string"]}, "balance": {"type": ["null", "number"]}}}
ITEMS = {"type": "array", "items": {"type": "object", "properties": {"sku": {"type": "string"}}}}
CHILD = f"{STREAM}__items"


def catalog(children: bool) -> dict:
    schema = {**SCHEMA, "properties": {**SCHEMA["properties"], "items": ITEMS}} if children else SCHEMA
    return {"streams": [{"stream": {"name": STREAM, "json_schema": schema}, "sync_mode": "incremental",
                         "destination_sync_mode": "append_dedup", "primary_key": [["id"]], "cursor_field": ["seq"]}]}


def plan(children: bool) -> StreamPlan:
    settings = parse_catalog(catalog(children))[STREAM]
    return StreamPlan(settings, schema_from_json_schema(STREAM, settings.json_schema, convention="native",
                                                        max_identifier_length=255, max_table_nesting=1000))


def raw_rows(spark: SparkSession, rows: int, keys: int, seq_base: int, load_id: str, step: int = 1,
             children: bool = False) -> DataFrame:
    """`rows` raw records: row i is key (i * step) % keys + 1 with cursor seq_base + i // keys; with `children`,
    two items each."""
    ids = spark.range(rows)
    items = [F.array(*[F.struct(F.concat(F.lit(f"sku-{n}-"), F.col("id").cast("string")).alias("sku"))
                       for n in (1, 2)]).alias("items")] if children else []
    record = F.to_json(F.struct(((F.col("id") * step) % keys + 1).alias("id"),
                                (F.lit(seq_base) + F.col("id") / keys).cast("long").alias("seq"),
                                F.concat(F.lit("name-"), F.col("id").cast("string")).alias("name"),
                                (F.col("id") % 1000 / 10).alias("balance"), *items))
    file, line = F.lit(f"{STREAM}/part-00000.jsonl"), F.col("id") + 1
    return ids.select(
        R.raw_id(F.lit(load_id), file, line).alias(N.raw_id), F.lit(load_id).alias(N.load_id),
        F.lit("2024-01-01 00:00:00").cast("timestamp").alias(N.extracted_at), record.alias(N.data),
        file.alias(N.file), line.alias(N.line), F.lit(None).cast("string").alias(N.error))


def build_history(spark: SparkSession, config: LakenormConfig, keys: int, versions: int, children: bool) -> None:
    """The stream's tables as a rebuild from raw writes them (in their order)."""
    rebuild_dedup_tables(spark, SourceTables.of(config, "bench"), plan(children),
                         raw_rows(spark, keys * versions, keys, 0, "history", children=children))


def apply_update(spark: SparkSession, config: LakenormConfig, keys: int, updates: int,
                 smallest: int, children: bool) -> tuple[float, int]:
    """Seconds and Spark jobs of one update package."""
    p = plan(children)
    package = raw_rows(spark, updates, keys, 1_000_000, "update", step=max(1, smallest // updates),
                       children=children)
    jobs, started = _jobs(spark), time.monotonic()
    write_dedup_tables(spark, SourceTables.of(config, "bench"), p, package, ["update"])
    return time.monotonic() - started, _jobs(spark) - jobs


def run(spark: SparkSession, out: Path, keys: int, versions: int, updates: int, smallest: int,
        deletion_vectors: bool, children: bool = False) -> float:
    dv = "on" if deletion_vectors else "off"
    root = out / f"keys-{keys}-dv-{dv}"
    shutil.rmtree(root, ignore_errors=True)
    (root / "landing").mkdir(parents=True)
    (root / "catalog.json").write_text(json.dumps(catalog(children)))
    config = parse_config({"warehouse": "wh", "sources": [
        {"name": "bench", "landing": "landing", "catalog": "catalog.json", "deletion_vectors": deletion_vectors}]},
        base_dir=root)
    started = time.monotonic()
    build_history(spark, config, keys, versions, children)
    print(f"| {keys} keys | DVs {dv} | history of {keys * versions} rows built in {time.monotonic() - started:.1f} s |")
    seconds, jobs = apply_update(spark, config, keys, updates, smallest, children)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"| {keys} keys | DVs {dv} | update of {updates} records: {seconds:.1f} s, {jobs} Spark jobs, "
          f"{_files(root / 'wh' / 'bench')} data files | files the update rewrote or marked: "
          f"{_rewritten(spark, config, children)} | load average {load} |")
    return seconds


def _jobs(spark: SparkSession) -> int:
    return spark.sparkContext._jsc.sc().dagScheduler().numTotalJobs()


def _rewritten(spark: SparkSession, config: LakenormConfig, children: bool) -> str:
    """Per table, the files the update rewrote (or gave deletion vectors) of the files it had."""
    found = []
    for table in (f"{STREAM}_scd", STREAM, *([CHILD] if children else [])):
        delta_table = DeltaTable.forPath(spark, config.table_path("bench", table))
        metrics = delta_table.history(1).first()["operationMetrics"]  # one commit's metrics: metadata
        if "numTargetFilesRemoved" not in metrics:  # a replaceWhere (WRITE), not a MERGE
            metrics = {"numTargetFilesRemoved": metrics.get("numRemovedFiles", 0), "numTargetFilesAdded":
                       metrics.get("numFiles", 0),
                       "numTargetDeletionVectorsAdded": metrics.get("numDeletionVectorsAdded", 0)}
        touched = int(metrics["numTargetFilesRemoved"]) + int(metrics["numTargetDeletionVectorsAdded"])
        files = delta_table.detail().first()["numFiles"] - int(metrics["numTargetFilesAdded"]) + int(
            metrics["numTargetFilesRemoved"])
        found.append(f"{table} {touched} of {files}")
    return ", ".join(found)


def _files(tables: Path) -> int:
    """Parquet files of the stream's tables, all versions (a MERGE without DVs rewrites the files it touches)."""
    return sum(1 for _ in tables.rglob("*.parquet"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--versions", type=int, default=2, help="versions per key in the history")
    parser.add_argument("--updates", type=int, default=10_000)
    parser.add_argument("--out", type=Path, default=Path("bench/out/scd"))
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--spread", action="store_true",
                        help="spread the update's keys over each history's whole key space (default: the smallest's)")
    parser.add_argument("--children", action="store_true", help=f"two items per record: a child table {CHILD}")
    parser.add_argument("--deletion-vectors", nargs="+", choices=["off", "on"], default=["off", "on"])
    args = parser.parse_args()
    spark = build_spark_session({"master": args.master, "spark.ui.enabled": "false"}, app_name="bench-scd")
    for dv in args.deletion_vectors:
        times = [run(spark, args.out, k, args.versions, args.updates, k if args.spread else min(args.keys), dv == "on",
                     args.children) for k in args.keys]
        print(f"DVs {dv}: ratio of update times (largest / smallest history): {times[-1] / times[0]:.2f}")


if __name__ == "__main__":
    main()
