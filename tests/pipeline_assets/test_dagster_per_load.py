"""Dagster, one run over a range of loads (what the landing sensor asks for when several packages land at once,
and a backfill): each partition's materialization, metadata and checks are its own; a load that fails fails the run
and its partition alone."""
from __future__ import annotations

import dagster as dg
import pytest

from pipeline_assets.factories import build_source_assets
from pipeline_assets.resources import SparkSessionResource
from pipeline_assets.sensors import RANGE_END, RANGE_START
from tests.pipeline_assets.conftest import write_case_package


def two_loads(config, case) -> dict:
    """L1: the case's 5 lines (2 rejected); L2: 2 of them (1 rejected). Expected counts per load."""
    write_case_package(config.source("shop").landing, {"load_id": "L2", "lines": case["lines"][1:3]})
    return {"L1": {"_norm_raw_orders": (5, 2), "orders": 3, "orders__line_items": 2},
            "L2": {"_norm_raw_orders": (2, 1), "orders": 1, "orders__line_items": 0}}


def latest_metadata(instance, table: str, partition: str) -> dict:
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(["shop", table]), asset_partitions=[partition]), limit=1).records
    return records[0].asset_materialization.metadata


def check_states(instance, table: str, check: str) -> dict[str | None, tuple[str, bool]]:
    """By partition: the check's latest status and whether it targets the partition's latest materialization (what
    the UI shows as the partition's check)."""
    key = dg.AssetCheckKey(dg.AssetKey(["shop", table]), check)
    return {info.partition_key: (info.latest_execution_status.value, info.is_current)
            for info in instance.event_log_storage.get_asset_check_partition_info([key])}


@pytest.mark.slow
def test_a_run_over_a_range_reports_each_partition_with_its_own_load(spark, bad_values_shop):
    config, case = bad_values_shop
    expected = two_loads(config, case)
    assets = build_source_assets(config, config.source("shop"), ["orders"])
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("shop_load_ids", ["L1", "L2", "L3"])  # L3: no package in the landing
        result = dg.materialize([assets], instance=instance, tags={RANGE_START: "L1", RANGE_END: "L3"},
                                resources={"spark": SparkSessionResource(spark_conf=config.spark)},
                                raise_on_error=False)
        assert not result.success
        failure = result.get_step_failure_events()[0].step_failure_data.error
        assert "no complete load package 'L3'" in failure.to_string()
        for load_id, tables in expected.items():
            lines, rejected = tables["_norm_raw_orders"]
            raw = latest_metadata(instance, "_norm_raw_orders", load_id)
            assert raw["dagster/partition_row_count"].value == lines, load_id
            assert raw["rejected_lines"].value == rejected, load_id
            assert raw["load_id"].value == load_id
            assert raw["dagster/row_count"].value == 7  # the table after the run: both loads
            for table in ("orders", "orders__line_items"):
                typed = latest_metadata(instance, table, load_id)
                assert typed["dagster/partition_row_count"].value == tables[table], (load_id, table)
                assert typed["rows_written"].value == tables[table], (load_id, table)
        status = instance.get_status_by_partition(dg.AssetKey(["shop", "orders"]), ["L1", "L2", "L3"],
                                                  assets.partitions_def)
        assert status == {"L1": dg.AssetPartitionStatus.MATERIALIZED, "L2": dg.AssetPartitionStatus.MATERIALIZED,
                          "L3": dg.AssetPartitionStatus.FAILED}
        checks = {(e.asset_key.path[-1], e.check_name, e.partition): e for e in result.get_asset_check_evaluations()}
        # L3's checks stay planned in its failed run (the UI shows them as failed to execute)
        assert check_states(instance, "_norm_raw_orders", "no_rejected_lines") == {
            "L1": ("FAILED", True), "L2": ("FAILED", True), "L3": ("PLANNED", True)}
        assert check_states(instance, "orders", "rows_typed_per_load") == {
            "L1": ("SUCCEEDED", True), "L2": ("SUCCEEDED", True), "L3": ("PLANNED", True)}
    for load_id, tables in expected.items():  # each partition's evaluation describes its load alone
        rejected = checks[("_norm_raw_orders", "no_rejected_lines", load_id)]
        assert not rejected.passed and rejected.severity == dg.AssetCheckSeverity.WARN
        assert rejected.metadata["rejected_lines"].value == tables["_norm_raw_orders"][1]
        assert rejected.metadata["load_id"].value == load_id
        rows = checks[("orders", "rows_typed_per_load", load_id)]
        assert rows.passed and rows.severity == dg.AssetCheckSeverity.ERROR
        assert rows.metadata["typed_rows"].value == tables["orders"]
    assert {partition for _, _, partition in checks} == {"L1", "L2"}
