"""`input: singer` (SPEC §2.4): a file of Singer messages (a tap's output) to typed tables."""
from __future__ import annotations

import gzip
import json
import os
import shutil
from datetime import datetime, timezone
from pathlib import Path

from normalization_core.configuration.config import parse_config
from normalization_core.inputs.listing import list_files
from normalization_core.inputs.singer_scan import scan_with_spark, scan_without_jvm
from normalization_core.io.delta import read_table
from normalization_core.passes.normalize import normalize_loads
from normalization_core.passes.pending import pending_input_bytes, pending_packages

RUN = Path(__file__).parents[2] / "cases" / "inputs" / "singer_run.jsonl"


def test_singer_run_to_typed_tables_with_schema_messages(spark, tmp_path):
    (tmp_path / "landing").mkdir()
    target = tmp_path / "landing" / "tap-shop 2024-06-01.jsonl"
    shutil.copy(RUN, target)
    os.utime(target, (1717300000, 1717300000))
    config = parse_config({"warehouse": "wh", "sources": [
        {"name": "shop", "landing": "landing", "input": "singer", "settle_seconds": 0}]}, base_dir=tmp_path)
    source = config.source("shop")

    assert pending_input_bytes(config, "shop") == target.stat().st_size  # (sized before any JVM starts)
    [package] = pending_packages(spark, config, source).packages
    assert (package.load_id, package.streams) == ("tap-shop_2024-06-01", ("orders", "users"))
    [result] = normalize_loads(spark, config, "shop", [package.load_id])
    assert result.quarantined_lines == 1

    users = read_table(spark, config.table_path("shop", "users"))  # key_properties -> append_dedup on id
    assert {f.name: f.dataType.simpleString() for f in users.schema.fields if not f.name.startswith("_norm")} == {
        "id": "bigint", "name": "string", "updated_at": "timestamp"}
    assert [(r.id, r.name, r.updated_at) for r in users.orderBy("id").collect()] == [
        (1, "ann b.", datetime(2024, 6, 1, 11, 30)), (2, "bob", datetime(2024, 6, 1, 11))]
    assert read_table(spark, config.table_path("shop", "users_scd")).count() == 3
    orders = read_table(spark, config.table_path("shop", "orders")).collect()
    assert [(r.id, r.total) for r in orders] == [(11, 2.5)]
    assert orders[0]["_norm_extracted_at"] == datetime.fromtimestamp(1717300000, timezone.utc).replace(tzinfo=None)

    raw_users = read_table(spark, config.table_path("shop", "_norm_raw_users")).orderBy("_norm_line").collect()
    assert [r["_norm_extracted_at"] for r in raw_users][:1] == [datetime(2024, 6, 1, 12)]  # time_extracted
    [quarantined] = read_table(spark, config.table_path("shop", "_norm_quarantine")).collect()
    assert quarantined["_norm_error"] == "RECORD before the SCHEMA of stream orders"
    assert json.loads(quarantined["_norm_data"])["record"] == {"id": 10, "total": 1.5}

    [state] = {r.state for r in read_table(spark, config.table_path("shop", "_norm_loads")).collect()}
    assert json.loads(state) == [{"bookmarks": {"users": {"updated_at": "2024-06-01T11:30:00Z"}}}]
    assert pending_packages(spark, config, source).packages == ()
    assert pending_input_bytes(config, "shop") == 0  # in the file ledger now

    ids = {r["_norm_raw_id"] for r in raw_users}
    normalize_loads(spark, config, "shop", [package.load_id])  # again: same raw ids, no duplicates
    again = read_table(spark, config.table_path("shop", "_norm_raw_users")).collect()
    assert {r["_norm_raw_id"] for r in again} == ids and len(again) == 3


def test_a_run_folder_is_one_load_and_files_still_written_wait(spark, tmp_path):
    run = tmp_path / "landing" / "run 7"
    run.mkdir(parents=True)
    lines = RUN.read_text().splitlines(keepends=True)
    (run / "part-1.jsonl").write_text("".join(lines[:4]))
    (run / "part-2.singer").write_text("".join(lines[4:]))
    for part in run.iterdir():
        os.utime(part, (1717300000, 1717300000))
    (tmp_path / "landing" / "next.jsonl").write_text("".join(lines[:2]))  # just written
    config = parse_config({"warehouse": "wh", "sources": [
        {"name": "shop", "landing": "landing", "input": "singer", "settle_seconds": 30}]}, base_dir=tmp_path)
    [package] = pending_packages(spark, config, config.source("shop")).packages
    assert (package.load_id, package.files, package.streams) == (
        "run_7", ("run 7/part-1.jsonl", "run 7/part-2.singer"), ("orders", "users"))


def test_the_scan_without_a_jvm_finds_what_the_spark_scan_finds(spark, tmp_path):
    lines = RUN.read_text().splitlines(keepends=True)
    (tmp_path / "run 1").mkdir()
    shutil.copy(RUN, tmp_path / "run 1" / "part-1.jsonl")
    long_line = json.dumps({"type": "RECORD", "stream": "users", "record": {"id": 3, "name": "x" * (5 << 20)}})
    odd = [json.dumps({"type": "schema", "stream": "refunds", "schema": {"type": "object"},
                       "key_properties": ["id"], "bookmark_properties": ["at"]}) + "\n",
           '{"type": "RECORD", "stream": "users", "record": {"type": "SCHEMA", "schema": {}}}\n',
           "not json\n", "\n", long_line + "\n", lines[0].replace('"users"', '"users2"')]
    with gzip.open(tmp_path / "run 2.jsonl.gz", "wt") as run:
        run.write("".join(odd))
    files = list_files(tmp_path, (".jsonl", ".jsonl.gz"))

    def found(scan):
        return [(m.file, m.stream, m.schema, m.key_properties, m.bookmark_properties) for m in scan.schemas]

    with_spark, without = scan_with_spark(tmp_path, files), scan_without_jvm(tmp_path, files)
    assert found(without) == found(with_spark)
    assert [(m.file, m.stream) for m in without.schemas] == [
        ("run 1/part-1.jsonl", "users"), ("run 1/part-1.jsonl", "orders"),
        ("run 2.jsonl.gz", "refunds"), ("run 2.jsonl.gz", "users2")]
    assert with_spark.streams == {
        "run 1/part-1.jsonl": {"orders", "users"}, "run 2.jsonl.gz": {"refunds", "users", "users2"}}
    # without a JVM, a file's streams are those of its SCHEMA messages (its `users` records have theirs in run 1)
    assert without.streams == {"run 1/part-1.jsonl": {"orders", "users"}, "run 2.jsonl.gz": {"refunds", "users2"}}
