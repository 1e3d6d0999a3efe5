"""Dagster, one run of two loads (a single-run backfill): each partition's metadata and checks are its own."""
from __future__ import annotations

import dagster as dg
import pytest

from pipeline_assets.factories import build_source_assets
from pipeline_assets.resources import SparkSessionResource
from tests.pipeline_assets.conftest import write_case_package

RANGE_START, RANGE_END = "dagster/asset_partition_range_start", "dagster/asset_partition_range_end"


def two_loads(config, case) -> dict:
    """L1: the case's 5 lines (2 rejected); L2: 2 of them (1 rejected). Expected counts per load."""
    write_case_package(config.source("shop").landing, {"load_id": "L2", "lines": case["lines"][1:3]})
    return {"L1": {"_norm_raw_orders": (5, 2), "orders": 3, "orders__line_items": 2},
            "L2": {"_norm_raw_orders": (2, 1), "orders": 1, "orders__line_items": 0}}


def latest_metadata(instance, table: str, partition: str) -> dict:
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(["shop", table]), asset_partitions=[partition]), limit=1).records
    return records[0].asset_materialization.metadata


@pytest.mark.slow
def test_a_two_load_run_reports_each_partition_with_its_own_load(spark, bad_values_shop):
    config, case = bad_values_shop
    expected = two_loads(config, case)
    assets = build_source_assets(config, config.source("shop"), ["orders"])
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("shop_load_ids", ["L1", "L2"])
        result = dg.materialize([assets], instance=instance, tags={RANGE_START: "L1", RANGE_END: "L2"},
                                resources={"spark": SparkSessionResource(spark_conf=config.spark)})
        assert result.success
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
        checks = {(e.asset_key.path[-1], e.check_name): e for e in result.get_asset_check_evaluations()}
    rejected = checks[("_norm_raw_orders", "no_rejected_lines")]  # one evaluation for the run, named per load
    assert not rejected.passed and rejected.severity == dg.AssetCheckSeverity.WARN
    assert rejected.metadata["rejected_lines_by_load"].value == {"L1": 2, "L2": 1}
    assert rejected.metadata["load_ids"].value == ["L1", "L2"]
    rows = checks[("orders", "rows_typed_per_load")]
    assert rows.passed and rows.severity == dg.AssetCheckSeverity.ERROR
    assert rows.metadata["load_ids"].value == ["L1", "L2"]
