"""Dagster: the rebuild-from-raw job and the observed registry / versions tables, run through Definitions."""
from __future__ import annotations

import dagster as dg
import pytest
from delta.tables import DeltaTable

from lakenorm_app.samples import SampleSpec, write_catalog, write_sample_packages
from normalization_core.configuration.config import parse_config
from normalization_core.io.delta import read_table
from pipeline_assets.definitions import build_definitions

TYPED = ["customers", "customers_scd", "events", "orders", "orders_scd", "orders__line_items",
         "orders__line_items__discounts", "orders__tags"]


@pytest.fixture
def normalized_shop(tmp_path):
    (tmp_path / "landing").mkdir()
    write_catalog(tmp_path / "catalog.json")
    ids = write_sample_packages(tmp_path / "landing", SampleSpec(packages=1, orders=5, customers=2, events=3))
    config = parse_config({"warehouse": "wh", "sources": [
        {"name": "shop", "landing": "landing", "catalog": "catalog.json"}]}, base_dir=tmp_path)
    return config, ids[0]


def rows(spark, config, table: str) -> list:
    df = read_table(spark, config.table_path("shop", table))
    return sorted(df.select([c for c in df.columns if not c.endswith("normalized_at")]).collect(), key=repr)


def version(spark, config, table: str) -> int:
    return DeltaTable.forPath(spark, config.table_path("shop", table)).history(1).collect()[0]["version"]


@pytest.mark.slow
def test_rebuild_job_and_observed_system_tables(spark, normalized_shop):
    config, load_id = normalized_shop
    defs = build_definitions(config)
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("shop_load_ids", [load_id])
        assert defs.resolve_job_def("shop_normalize").execute_in_process(
            instance=instance, partition_key=load_id).success
        before = {t: rows(spark, config, t) for t in TYPED}
        spark.sql(f"DELETE FROM delta.`{config.table_path('shop', 'events')}`")  # a damaged typed table
        orders_version = version(spark, config, "orders")

        rebuild = defs.resolve_job_def("shop_rebuild")
        only_events = {"ops": {"shop_rebuild_from_raw": {"config": {"streams": ["events"]}}}}
        assert rebuild.execute_in_process(instance=instance, run_config=only_events).success
        assert rows(spark, config, "events") == before["events"]
        assert version(spark, config, "orders") == orders_version  # other streams untouched
        observed = instance.fetch_observations(dg.AssetKey(["shop", "events"]), limit=1).records[0]
        assert observed.asset_observation.metadata["dagster/row_count"].value == 3

        assert rebuild.execute_in_process(instance=instance).success  # no config: every stream
        assert {t: rows(spark, config, t) for t in TYPED} == before
        unknown = {"ops": {"shop_rebuild_from_raw": {"config": {"streams": ["nope"]}}}}
        failed = rebuild.execute_in_process(instance=instance, run_config=unknown, raise_on_error=False)
        assert not failed.success
        assert "'nope' has no typed tables" in str(failed.failure_data_for_node("shop_rebuild_from_raw").error)

        assert defs.resolve_job_def("shop_observe_system_tables").execute_in_process(instance=instance).success
        loads = instance.fetch_observations(dg.AssetKey(["shop", "_norm_loads"]), limit=1).records[0]
        assert loads.asset_observation.metadata["dagster/row_count"].value == 3  # one load, three streams
        assert loads.asset_observation.data_version == str(version(spark, config, "_norm_loads"))
        versions = instance.fetch_observations(dg.AssetKey(["shop", "_norm_versions"]), limit=1).records[0]
        assert versions.asset_observation.metadata["dagster/row_count"].value == 3  # one schema per stream
