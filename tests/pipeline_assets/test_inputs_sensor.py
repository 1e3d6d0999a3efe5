"""Dagster with a producer input (SPEC §2.4, §8): the landing sensor registers a unit of work of each input kind
(an Airbyte sync in a folder or a bucket, a Singer run, a dlt extract), a run normalizes it."""
from __future__ import annotations

import json
import logging
import math
import os
import re
import shutil
from datetime import datetime, timezone
from pathlib import Path

import dagster as dg
import pytest

from normalization_core.configuration.config import parse_config
from normalization_core.io.delta import read_table, table_version
from normalization_core.plans.source_tables import SourceTables
from normalization_core.plans.stream_plans import stream_plans
from pipeline_assets.definitions import build_definitions
from pipeline_assets.factories import build_source_assets
from pipeline_assets.resources import SparkSessionResource
from pipeline_assets.system_tables import delta_table_state

DAY = "2024_06_01_1717200000000"
SINGER_RUN = Path(__file__).parents[1] / "cases" / "inputs" / "singer_run.jsonl"


def write(landing, relative: str, records: list[dict]) -> None:
    """A file as Airbyte's S3 destination names it, last written an hour ago."""
    path = landing / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    os.utime(path, (path.stat().st_mtime - 3600,) * 2)


def sensor_run_sensor(config, load_id: str = "101", streams: tuple[str, ...] = ("orders",)) -> None:
    """A sensor tick registers the load, a run normalizes it, the next tick finds nothing new."""
    defs = build_definitions(config)
    with dg.instance_for_test() as instance:
        tick = defs.resolve_sensor_def("shop_landing_sensor")(
            dg.build_sensor_context(instance=instance, definitions=defs))
        assert [r.partition_key for r in tick.run_requests] == [load_id]
        instance.add_dynamic_partitions("shop_load_ids", [load_id])
        assets = build_source_assets(config, config.source("shop"), list(streams))
        result = dg.materialize([assets], instance=instance, partition_key=load_id,
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


def test_a_replaced_file_is_one_run_of_the_file_ledger_job_and_one_warning(spark, tmp_path, load_case):
    """Sync 101 normalized, then its file replaced (the same size, other bytes): the tick requests one run of the file
    ledger job, which warns once in its event log and records the file; the next tick requests nothing."""
    case = load_case("inputs/airbyte_destination.json")
    landing = tmp_path / "landing"
    write(landing, f"public/orders/{DAY}_0.jsonl", case["orders"][:2])
    config = parse_config({"warehouse": "wh", "sources": [
        {"name": "shop", "landing": "landing", "input": "airbyte_destination"}]}, base_dir=tmp_path)
    sensor_run_sensor(config)
    orders = landing / f"public/orders/{DAY}_0.jsonl"
    write(landing, orders.relative_to(landing).as_posix(),
          [{**case["orders"][0], "status": "PAID"}, case["orders"][1]])  # "paid" -> "PAID": the same size
    defs = build_definitions(config)
    sensor = defs.resolve_sensor_def("shop_landing_sensor")
    with dg.instance_for_test() as instance:
        tick = sensor(dg.build_sensor_context(instance=instance, definitions=defs))
        [request] = tick.run_requests
        assert request.job_name == "shop_file_ledger" and request.partition_key is None
        result = defs.resolve_job_def("shop_file_ledger").execute_in_process(instance=instance)
        assert result.success
        warnings = [e.user_message for e in instance.all_logs(result.run_id) if e.level == logging.WARNING]
        assert len(warnings) == 1 and warnings[0].startswith(
            f"file 'public/orders/{DAY}_0.jsonl', normalized in load '101', was replaced by other content"), warnings
        again = sensor(dg.build_sensor_context(instance=instance, definitions=defs))
        assert not again.run_requests and again.skip_reason.skip_message == "no new complete packages (0 rejected)"
    statuses = [r.status for r in read_table(spark, config.table_path("shop", "_norm_files")).collect()]
    assert sorted(statuses) == ["normalized", "replaced"]


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
    tables = SourceTables.of(config, "shop")
    plans = stream_plans(config.source("shop"), stored_in=tables)
    assert plans["orders"].schema.get("inferred")
    registry = tables.registry_path  # observed in the bucket too (delta-rs with the store's credentials)
    observed = delta_table_state(registry, tables.storage_options(registry))
    assert observed["data_version"] == dg.DataVersion(str(table_version(spark, registry)))
    assert observed["metadata"]["dagster/row_count"] == read_table(spark, registry).count() == 1


def test_sensor_and_run_over_a_singer_run(spark, tmp_path):
    (tmp_path / "landing").mkdir()
    shutil.copy(SINGER_RUN, tmp_path / "landing" / "tap-shop 2024-06-01.jsonl")
    config = parse_config({"warehouse": "wh", "sources": [
        {"name": "shop", "landing": "landing", "input": "singer", "settle_seconds": 0}]}, base_dir=tmp_path)
    sensor_run_sensor(config, "tap-shop_2024-06-01", ("orders", "users"))
    users = read_table(spark, config.table_path("shop", "users")).orderBy("id").collect()
    assert [(r.id, r.name) for r in users] == [(1, "ann b."), (2, "bob")]


def test_sensor_and_run_over_a_dlt_extract(spark, tmp_path):
    dlt = pytest.importorskip("dlt")
    os.environ.setdefault("RUNTIME__DLTHUB_TELEMETRY", "false")

    @dlt.resource(name="users", primary_key="id", write_disposition="merge")
    def users():
        yield [{"id": 1, "name": "ann", "seen_at": datetime(2024, 6, 1, tzinfo=timezone.utc)}, {"id": 2, "name": "bob"}]

    pipeline = dlt.pipeline(pipeline_name="shop", pipelines_dir=str(tmp_path / "pipes"), dataset_name="shop")
    load_id = pipeline.extract(users()).loads_ids[-1]
    config = parse_config({"warehouse": "wh", "sources": [
        {"name": "shop", "landing": str(tmp_path / "pipes/shop/normalize/extracted"), "input": "dlt_extract",
         "settle_seconds": 0, "convention": "dlt"}]}, base_dir=tmp_path)
    sensor_run_sensor(config, load_id, ("users",))
    rows = read_table(spark, config.table_path("shop", "users")).orderBy("id").collect()
    assert [(r.id, r.name, r.seen_at) for r in rows] == [(1, "ann", datetime(2024, 6, 1)), (2, "bob", None)]


def test_sensor_skip_reason_says_what_still_settles(tmp_path):
    """A Singer run still being written (a folder of two files) and another run's file: the tick requests nothing
    and says what waits and from when it is readable, as `lakenorm normalize` does."""
    landing = tmp_path / "landing"
    (landing / "run 7").mkdir(parents=True)
    lines = SINGER_RUN.read_text().splitlines(keepends=True)
    for name, part in (("run 7/part-1.jsonl", lines[:4]), ("run 7/part-2.jsonl", lines[4:]), ("run-8.jsonl", lines)):
        (landing / name).write_text("".join(part))
    config = parse_config({"warehouse": "wh", "sources": [
        {"name": "shop", "landing": "landing", "input": "singer", "settle_seconds": 600}]}, base_dir=tmp_path)
    newest = max(p.stat().st_mtime for p in landing.rglob("*.jsonl"))
    readable = datetime.fromtimestamp(math.ceil(newest + 600), tz=timezone.utc).strftime("%H:%M:%S")
    defs = build_definitions(config)
    with dg.instance_for_test() as instance:
        tick = defs.resolve_sensor_def("shop_landing_sensor")(
            dg.build_sensor_context(instance=instance, definitions=defs))
    assert not tick.run_requests
    assert re.fullmatch(rf"no new complete packages \(0 rejected\); 3 files \(2 packages\) still settling, "
                        rf"readable from (\d{{4}}-\d\d-\d\d )?{readable} UTC \(in \d+ min\)",
                        tick.skip_reason.skip_message), tick.skip_reason.skip_message
