"""Dagster: definitions from the configuration, the landing sensor, partitioned raw materializations."""
from __future__ import annotations

import dagster as dg
import pytest

from lakenorm_app.demo import dagster_yaml
from lakenorm_app.samples import SampleSpec, write_catalog, write_sample_packages
from normalization_core.configuration.config import parse_config
from normalization_core.io.delta import read_table
from pipeline_assets.definitions import build_definitions
from pipeline_assets.factories import build_source_assets, source_job_name
from pipeline_assets.resources import SparkSessionResource
from pipeline_assets.sensors import RANGE_END, RANGE_START, partition_runs

STREAMS = ["customers", "events", "orders"]


@pytest.fixture
def shop(tmp_path):
    landing = tmp_path / "landing"
    landing.mkdir()
    write_catalog(tmp_path / "catalog.json")
    config = parse_config({"warehouse": "wh", "sources": [
        {"name": "shop", "landing": "landing", "catalog": "catalog.json"}]}, base_dir=tmp_path)
    return config, landing


def sensor_tick(defs, instance, cursor=None):
    """The SensorResult of one tick; like the daemon, the caller applies its partition requests."""
    sensor = defs.resolve_sensor_def("shop_landing_sensor")
    return sensor(dg.build_sensor_context(instance=instance, definitions=defs, cursor=cursor))


def test_definitions_model_each_stream_as_a_partitioned_raw_asset(shop):
    config, _ = shop
    defs = build_definitions(config)
    graph = defs.resolve_asset_graph()
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    assert keys == {f"shop/_norm_raw_{s}" for s in STREAMS} | {f"shop/{s}" for s in STREAMS} | {
        "shop/orders__line_items", "shop/orders__line_items__discounts", "shop/orders__tags",
        "shop/orders_scd", "shop/customers_scd", "shop/_norm_loads", "shop/_norm_versions"}

    def parents(key: str) -> set[str]:
        return {k.to_user_string() for k in graph.get(dg.AssetKey(key.split("/"))).parent_keys}

    assert parents("shop/events") == {"shop/_norm_raw_events"}
    assert parents("shop/orders_scd") == {"shop/_norm_raw_orders"}  # append_dedup: raw -> history -> current
    assert parents("shop/orders") == {"shop/orders_scd"}
    assert parents("shop/orders__line_items") == {"shop/orders_scd"}
    assert parents("shop/orders__line_items__discounts") == {"shop/orders__line_items"}
    assert parents("shop/orders__tags") == {"shop/orders_scd"}
    job = defs.resolve_job_def(source_job_name(config.source("shop")))
    assert job.partitions_def.name == "shop_load_ids"
    assert defs.resolve_sensor_def("shop_landing_sensor").default_status == dg.DefaultSensorStatus.RUNNING


def test_every_job_runs_its_step_in_the_runs_process_and_queued_runs_start_within_a_second(shop, tmp_path):
    """A step process of its own would load the code location again before its JVM (BENCHMARKS.md: 88ad4cd, 2026-11-26)."""
    defs = build_definitions(shop[0])
    jobs = {job.name: job.executor_def.name for job in defs.get_repository_def().get_all_jobs()}
    assert {"shop_normalize", "shop_rebuild", "shop_maintenance", "shop_observe_system_tables"} <= set(jobs)
    assert set(jobs.values()) == {"in_process"}
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "dagster.yaml").write_text(dagster_yaml())
    with dg.DagsterInstance.from_config(str(tmp_path / "home")) as instance:  # the shipped instance settings
        assert instance.run_coordinator.dequeue_interval_seconds == 1
        assert instance.get_concurrency_config().run_queue_config.max_concurrent_runs == 1  # the embedded metastore


def test_sensor_registers_only_complete_new_packages_and_never_twice(shop):
    config, landing = shop
    ids = write_sample_packages(landing, SampleSpec(packages=2, orders=5, customers=2, events=3))
    (landing / "in-flight").mkdir()  # no manifest yet
    (landing / "broken").mkdir()
    (landing / "broken" / "_manifest.json").write_text("{not json")
    defs = build_definitions(config)
    with dg.instance_for_test() as instance:
        first = sensor_tick(defs, instance)
        assert [list(r.partition_keys) for r in first.dynamic_partitions_requests] == [ids]
        (batch,) = first.run_requests  # one run over both, a range in the order the partitions are added
        assert (batch.tags[RANGE_START], batch.tags[RANGE_END]) == (ids[0], ids[1])
        assert batch.run_key == f"{ids[0]}..{ids[1]}" and batch.partition_key is None
        instance.add_dynamic_partitions("shop_load_ids", ids)

        again = sensor_tick(defs, instance, cursor=first.cursor)
        assert not again.run_requests and not again.dynamic_partitions_requests
        assert again.skip_reason.skip_message == "no new complete packages (1 rejected)"

        later = write_sample_packages(landing, SampleSpec(packages=3, orders=5, customers=2, events=3))[2:]
        third = sensor_tick(defs, instance, cursor=again.cursor)
        assert [r.partition_key for r in third.run_requests] == later


def test_a_tick_asks_for_runs_of_at_most_max_loads_per_run_neighbouring_partitions(tmp_path):
    landing = tmp_path / "landing"
    ids = write_sample_packages(landing, SampleSpec(packages=5, orders=1, customers=1, events=1))
    config = parse_config({"warehouse": "wh", "sources": [
        {"name": "shop", "landing": "landing", "max_loads_per_run": 2}]}, base_dir=tmp_path)
    defs = build_definitions(config)
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("shop_load_ids", ["L0"])
        requests = sensor_tick(defs, instance).run_requests
    assert [(r.tags.get(RANGE_START), r.tags.get(RANGE_END), r.partition_key) for r in requests] == [
        (ids[0], ids[1], None), (ids[2], ids[3], None), (None, None, ids[4])]
    # a load ID elsewhere in Dagster's order (added earlier, by the polling schedule) is not inside another's range
    assert partition_runs(["a", "b", "x", "c", "d", "e"], ["a", "b", "c", "d", "e"], 2) == [
        ["a", "b"], ["c", "d"], ["e"]]
    assert partition_runs(["c", "x", "a", "b"], ["a", "b", "c"], 50) == [["c"], ["a", "b"]]


def test_the_backfill_policy_runs_a_backfill_of_n_partitions_as_ceil_n_over_max_loads_per_run_runs(shop):
    config, _ = shop
    assets = build_source_assets(config, config.source("shop"), STREAMS)
    assert assets.backfill_policy == dg.BackfillPolicy.multi_run(max_partitions_per_run=50)


@pytest.mark.slow
def test_materialize_two_partitions_writes_the_right_rows(spark, shop):
    config, landing = shop
    ids = write_sample_packages(landing, SampleSpec(packages=2, orders=7, customers=3, events=4))
    assets = build_source_assets(config, config.source("shop"), STREAMS)
    resources = {"spark": SparkSessionResource(spark_conf=config.spark)}
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("shop_load_ids", ids)
        for load_id in ids:
            result = dg.materialize([assets], instance=instance, partition_key=load_id, resources=resources)
            assert result.success
            mats = {m.asset_key.path[-1]: m.metadata for m in result.asset_materializations_for_node("shop_normalize_loads")}
            assert mats["_norm_raw_orders"]["dagster/partition_row_count"].value == 7
            assert mats["_norm_raw_events"]["rejected_lines"].value == 0
            assert mats["events"]["dagster/partition_row_count"].value == 4
            assert mats["orders_scd"]["rows_written"].value >= 7  # 7 new versions, older ones closed
            assert mats["orders__line_items"]["rows_written"].value >= 7  # every sample order has items
        status = instance.get_status_by_partition(dg.AssetKey(["shop", "_norm_raw_orders"]), ids,
                                                  assets.partitions_def)
        assert set(status.values()) == {dg.AssetPartitionStatus.MATERIALIZED}
    orders = read_table(spark, config.table_path("shop", "_norm_raw_orders"))
    assert {(r["_norm_load_id"], r["count"]) for r in orders.groupBy("_norm_load_id").count().collect()} == {
        (ids[0], 7), (ids[1], 7)}
    assert spark.range(1).count() == 1  # the resource left the shared session running
