"""`input: singer` with a real producer: a tap built with Meltano's Singer SDK writes the messages."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

from normalization_core.configuration.config import parse_config
from normalization_core.io.delta import read_table
from normalization_core.passes.normalize import normalize_loads
from normalization_core.passes.pending import pending_packages

TAP = Path(__file__).parent / "sdk_tap.py"
RECORDS = Path(__file__).parents[2] / "cases" / "inputs" / "sdk_tap_users.json"


def run_tap(target: Path, tmp_path: Path) -> None:
    config = tmp_path / "tap_config.json"
    config.write_text(json.dumps({"records_file": str(RECORDS)}), encoding="utf-8")
    with target.open("wb") as out:
        subprocess.run([sys.executable, str(TAP), "--config", str(config)], stdout=out, check=True,
                       stderr=subprocess.DEVNULL)
    os.utime(target, (1717300000, 1717300000))


def test_an_sdk_taps_output_to_typed_tables(spark, tmp_path):
    (tmp_path / "landing").mkdir()
    run_tap(tmp_path / "landing" / "tap-shop 2024-06-01.jsonl", tmp_path)
    config = parse_config({"warehouse": "wh", "sources": [
        {"name": "shop", "landing": "landing", "input": "singer", "settle_seconds": 0}]}, base_dir=tmp_path)
    [package] = pending_packages(spark, config, config.source("shop")).packages
    normalize_loads(spark, config, "shop", [package.load_id])
    users = read_table(spark, config.table_path("shop", "users"))  # key_properties: append_dedup on id
    assert {f.name: f.dataType.simpleString() for f in users.schema.fields if not f.name.startswith("_norm")} == {
        "id": "bigint", "name": "string", "updated_at": "timestamp", "address__city": "string"}
    assert [(r.id, r.name, r.updated_at, r.address__city) for r in users.orderBy("id").collect()] == [
        (1, "ann b.", datetime(2024, 6, 1, 12), "Bergen"), (2, "bob", datetime(2024, 6, 1, 11), None)]
    history = read_table(spark, config.table_path("shop", "users_scd")).orderBy("updated_at").collect()
    assert [(r.id, r.name, r._norm_is_current) for r in history] == [(1, "ann", False), (2, "bob", True),
                                                                     (1, "ann b.", True)]
    tags = read_table(spark, config.table_path("shop", "users__tags")).orderBy("value").collect()
    by_version = {r._norm_id: r.name for r in history}
    assert [(r.value, by_version[r._norm_parent_id], r._norm_list_idx) for r in tags] == [
        ("a", "ann", 0), ("b", "ann", 1), ("c", "ann b.", 0)]
    [load] = read_table(spark, config.table_path("shop", "_norm_loads")).collect()
    assert json.loads(load.state) == [{"bookmarks": {"users": {"replication_key": "updated_at",
                                                               "replication_key_value": "2024-06-01T12:00:00+00:00"}}}]
    assert load.rows == {"_norm_raw_users": 3, "users_scd": 3, "users": 2, "users__tags": 3}
