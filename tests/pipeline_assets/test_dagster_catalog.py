"""Dagster with `register:`: assets name their catalog table, each partition the Delta version its load made."""
from __future__ import annotations

import uuid
from dataclasses import replace

import dagster as dg
import pytest

from normalization_core.api import SourceTables, load_table_versions
from normalization_core.configuration.register import Registration
from pipeline_assets.factories import build_source_assets
from pipeline_assets.resources import SparkSessionResource
from tests.pipeline_assets.test_dagster_per_load import latest_metadata, two_loads


@pytest.mark.slow
def test_partitions_carry_their_loads_delta_version_and_assets_their_table_name(spark, bad_values_shop):
    config, case = bad_values_shop
    two_loads(config, case)
    schema = f"shop_{uuid.uuid4().hex[:8]}"  # the tests share the session's catalog
    config = replace(config, sources=(replace(config.source("shop"), register=Registration(schema)),))
    assets = build_source_assets(config, config.source("shop"), ["orders"])
    specs = {spec.key.path[-1]: spec for spec in assets.specs}
    assert specs["orders__line_items"].metadata["dagster/table_name"] == f"{schema}.orders__line_items"
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("shop_load_ids", ["L1", "L2"])
        for load_id in ("L1", "L2"):  # one run per load, as the landing sensor requests them
            result = dg.materialize([assets], instance=instance, partition_key=load_id,
                                    resources={"spark": SparkSessionResource(spark_conf=config.spark)})
            assert result.success
        recorded = load_table_versions(spark, SourceTables(config, config.source("shop")), ["L1", "L2"])
        assert {"_norm_raw_orders", "orders", "orders__line_items"} <= set(recorded["L1"])
        assert recorded["L2"]["orders"] > recorded["L1"]["orders"]  # (a table a load did not commit to: no version)
        for table in ("_norm_raw_orders", "orders", "orders__line_items"):
            for load_id in ("L1", "L2"):
                found = latest_metadata(instance, table, load_id).get("delta_version")
                assert (found and found.value) == recorded[load_id].get(table), (table, load_id)
    assert spark.table(f"{schema}.orders").count() == 4  # registered by name: both loads' rows
