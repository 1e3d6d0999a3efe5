"""Dagster with a producer input (SPEC §2.4, §8): the landing sensor registers an Airbyte sync (in a folder or a
bucket), a run normalizes it."""
from __future__ import annotations

import json
import os

import dagster as dg
import pytest

from normalization_core.config import parse_config
from normalization_core.io.delta import read_table
from normalization_core.typed_load import asset_stream_plans
from pipeline_assets.definitions import build_definitions
from pipeline_assets.factories import build_source_assets
from pipeline_assets.resources import SparkSessionResource

DAY = "2024_06_01_1717200000000"


def write(landing, relative: str, records: list[dict]) -> None:
    """A file as Airbyte's S3 destination names it, last written an hour ago."""
    path = landing / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    os.utime(path, (path.stat().st_mtime - 3600,) * 2)


def sensor_run_sensor(config) -> None:
    """A sensor tick registers sync 101, a run normalizes it, the next tick finds nothing new."""
    defs = build_definitions(config)
    with dg.instance_for_test() as instance:
        tick = defs.resolve_sensor_def("shop_landing_sensor")(
            dg.build_sensor_context(instance=instance, definitions=defs))
        assert [r.partition_key for r in tick.run_requests] == ["101"]
        instance.add_dynamic_partitions("shop_load_ids", ["101"])
        assets = build_source_assets(config, config.source("shop"), ["orders"])
        result = dg.materialize([assets], instance=instance, partition_key="101",
                                resources={"spark": SparkSessionResource(spark_conf=config.spark)})
        assert result.success
        again = defs.resolve_sensor_def("shop_landing_sensor")(
            dg.build_sensor_context(instance=instance, definitions=defs, cursor=tick.cursor))
        assert not again.run_requests  # normalized files are in the ledger: nothing new


def test_sensor_and_run_over_airbyte_destination_files(spark, tmp_path, load_case):
    case = load_case("inputs/airbyte_destination.json")
    (tmp_path / "landing").mkdir()
    write(tmp_path / "landing", f"public/orders/{DAY}_0.jsonl", case["orders"][:2])
    config = parse_config({"warehouse": "wh", "sources": [
        {"name": "shop", "landing": "landing", "input": "airbyte_destination"}]}, base_dir=tmp_path)
    sensor_run_sensor(config)
    orders = read_table(spark, config.table_path("shop", "orders")).orderBy("id").collect()
    assert [(r.id, r.total, r.status) for r in orders] == [(1, 9.5, "paid"), (2, 20.25, None)]


@pytest.mark.slow
def test_sensor_and_run_over_airbyte_files_in_a_bucket(spark, tmp_path, s3_bucket, load_case):
    """The landing in moto's loopback S3 server, the tables written there; the code location reads the
    stored schema back with delta-rs (no Spark)."""
    orders = load_case("inputs/airbyte_destination.json")["orders"][:2]
    s3_bucket.client.put_object(Bucket=s3_bucket.name, Key=f"airbyte/public/orders/{DAY}_0.jsonl",
                                Body="".join(json.dumps(r) + "\n" for r in orders).encode())
    config = parse_config({
        "warehouse": s3_bucket.uri("warehouse"), "object_store": {"endpoint": s3_bucket.endpoint},
        "sources": [{"name": "shop", "landing": s3_bucket.uri("airbyte"), "input": "airbyte_destination",
                     "settle_seconds": 0}]}, base_dir=tmp_path)
    sensor_run_sensor(config)
    rows = read_table(spark, config.table_path("shop", "orders")).orderBy("id").collect()
    assert [(r.id, r.total, r.status) for r in rows] == [(1, 9.5, "paid"), (2, 20.25, None)]
    assert asset_stream_plans(config, config.source("shop"))["orders"].schema.get("inferred")
