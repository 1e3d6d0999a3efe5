"""Definitions of the demo configuration; the maintenance job and the polling schedule."""
from __future__ import annotations

import dagster as dg
import pytest
from delta.tables import DeltaTable

from lakenorm_app.demo import write_demo_files
from lakenorm_app.samples import SampleSpec, write_sample_packages
from normalization_core.api import SourceTables, known_streams, stream_plans
from normalization_core.configuration.config import load_config
from normalization_core.io.maintenance import table_row_count
from normalization_core.passes.normalize import normalize_load
from pipeline_assets.definitions import build_definitions, defs
from pipeline_assets.schedules import maintained_tables
from pipeline_assets.sensors import RANGE_END, RANGE_START
from tests.pipeline_assets.conftest import write_case_package


def test_the_demo_configuration_loads_with_checks_and_schedules(tmp_path, monkeypatch):
    config_file = write_demo_files(tmp_path, SampleSpec(packages=1, orders=2, customers=1, events=1))
    monkeypatch.setenv("LAKENORM_CONFIG", str(config_file))
    loaded = defs()
    dg.Definitions.validate_loadable(loaded)

    maintenance = loaded.resolve_schedule_def("shop_maintenance")
    assert (maintenance.cron_schedule, maintenance.job_name) == ("0 3 * * *", "shop_maintenance")
    assert maintenance.default_status == dg.DefaultScheduleStatus.RUNNING
    polling = loaded.resolve_schedule_def("shop_polling")
    assert polling.job_name == "shop_normalize"
    assert polling.default_status == dg.DefaultScheduleStatus.STOPPED
    checks = {(k.asset_key.to_user_string(), k.name) for k in loaded.resolve_asset_graph().asset_check_keys}
    assert {("shop/orders_scd", "one_current_version_per_key"), ("shop/orders_scd", "non_overlapping_validity"),
            ("shop/orders__line_items", "no_orphan_child_rows")} <= checks  # dedup children: against history
    assert {("shop/orders", "primary_key_unique"), ("shop/customers", "primary_key_unique"),
            ("shop/events", "rows_typed_per_load"),
            ("shop/orders__line_items__discounts", "no_orphan_child_rows")} <= checks


def test_polling_registers_new_packages_once_and_requests_one_run_over_them(tmp_path):
    config = load_config(write_demo_files(tmp_path, SampleSpec(packages=2, orders=2, customers=1, events=1)))
    loaded = build_definitions(config)
    polling = loaded.resolve_schedule_def("shop_polling")
    with dg.instance_for_test() as instance:
        tick = lambda: polling.evaluate_tick(  # noqa: E731
            dg.build_schedule_context(instance=instance, repository_def=loaded.get_repository_def()))
        first = tick()
        ids = instance.get_dynamic_partitions("shop_load_ids")
        assert len(ids) == 2
        (batch,) = first.run_requests  # one run over both: the range of the partitions it just added
        assert (batch.tags[RANGE_START], batch.tags[RANGE_END], batch.run_key) == (ids[0], ids[1], "..".join(ids))
        again = tick()
        assert not again.run_requests and again.skip_message == "no new complete packages (0 rejected)"
        later = write_sample_packages(config.source("shop").landing, SampleSpec(packages=3, orders=2, customers=1,
                                                                                events=1))[2:]
        third = tick()
        assert [r.partition_key for r in third.run_requests] == later


def test_the_maintenance_job_keeps_the_current_tables_of_dedup_streams_in_key_order_and_histories_newest_first(
        tmp_path):
    config = load_config(write_demo_files(tmp_path, SampleSpec(packages=1, orders=2, customers=1, events=1)))
    source = config.source("shop")
    tables = maintained_tables(SourceTables(config, source), known_streams(config, source), stream_plans(source))
    assert {t: keys for t, keys in tables.items() if keys} == {
        "orders_scd": ("_norm_valid_to", "id"), "orders": ("id",), "customers_scd": ("_norm_valid_to", "id"),
        "customers": ("id",)}
    assert {"_norm_raw_orders", "orders__line_items", "events", "_norm_loads"} <= set(tables)


@pytest.mark.slow
def test_the_maintenance_job_optimizes_and_vacuums_every_table_of_the_source(spark, bad_values_shop):
    config, case = bad_values_shop
    landing = config.source("shop").landing
    second = write_case_package(landing, {**case, "load_id": "L2"})
    for load_id in (case["load_id"], second):  # two loads: two files per table, something to compact
        normalize_load(spark, config, "shop", load_id)
    job = build_definitions(config).resolve_job_def("shop_maintenance")
    with dg.instance_for_test() as instance:
        assert job.execute_in_process(instance=instance).success
    for table in ("_norm_raw_orders", "orders", "orders__line_items", "_norm_loads"):
        history = DeltaTable.forPath(spark, config.table_path("shop", table)).history()
        operations = [r["operation"] for r in history.orderBy("version").select("operation").collect()]
        assert operations[-3:] == ["OPTIMIZE", "VACUUM START", "VACUUM END"], table
    assert table_row_count(spark, config.table_path("shop", "orders")) == 2 * case["expected"]["rows"]["orders"]
