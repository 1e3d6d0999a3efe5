"""Dagster and append_dedup: a multi-partition run (a single-run backfill) writes every load and gives the same
tables as one run per partition."""
from __future__ import annotations

import dagster as dg
import pytest

from lakenorm_app.samples import SampleSpec, write_catalog, write_sample_packages
from normalization_core.configuration.config import parse_config
from normalization_core.io.delta import read_table
from pipeline_assets.factories import build_source_assets
from pipeline_assets.resources import SparkSessionResource
from tests.normalization_core.scd_helpers import table_rows

STREAMS = ["customers", "events", "orders"]
DEDUP_TABLES = ["customers_scd", "customers", "orders_scd", "orders", "orders__line_items", "orders__tags"]


def shop(root):
    (root / "landing").mkdir(parents=True)
    write_catalog(root / "catalog.json")
    config = parse_config({"warehouse": "wh", "sources": [
        {"name": "shop", "landing": "landing", "catalog": "catalog.json"}]}, base_dir=root)
    ids = write_sample_packages(root / "landing", SampleSpec(packages=2, orders=4, customers=4, events=1,
                                                             update_ratio=0.6))
    return config, ids


@pytest.mark.slow
def test_one_multi_partition_run_equals_one_run_per_partition(spark, tmp_path):
    tables = {}
    for mode in ("single_run", "per_partition"):
        config, ids = shop(tmp_path / mode)
        assets = build_source_assets(config, config.source("shop"), STREAMS)
        resources = {"spark": SparkSessionResource(spark_conf=config.spark)}
        with dg.instance_for_test() as instance:
            instance.add_dynamic_partitions("shop_load_ids", ids)
            if mode == "single_run":  # a single-run backfill of a partition range, as the UI launches it
                results = [dg.materialize([assets], instance=instance, resources=resources, tags={
                    "dagster/asset_partition_range_start": ids[0], "dagster/asset_partition_range_end": ids[1]})]
                events = read_table(spark, config.table_path("shop", "_norm_raw_events"))
                assert sorted(r[0] for r in events.select("_norm_load_id").distinct().collect()) == ids
                status = instance.get_status_by_partition(dg.AssetKey(["shop", "events"]), ids,
                                                          assets.partitions_def)
                assert set(status.values()) == {dg.AssetPartitionStatus.MATERIALIZED}
            else:
                results = [dg.materialize([assets], instance=instance, partition_key=i, resources=resources)
                           for i in ids]
            assert all(r.success for r in results)
            mats = {m.asset_key.path[-1] for r in results
                    for m in r.asset_materializations_for_node("shop_normalize_loads")}
            assert {"customers_scd", "customers", "orders_scd", "orders"} <= mats
            checks = {(e.asset_key.path[-1], e.check_name): e.passed
                      for r in results for e in r.get_asset_check_evaluations()}
            assert {("customers_scd", "one_current_version_per_key"), ("orders_scd", "non_overlapping_validity"),
                    ("orders", "primary_key_unique"), ("orders__line_items", "no_orphan_child_rows"),
                    ("orders__line_items__discounts", "no_orphan_child_rows")} <= set(checks)
            assert all(checks.values()), [k for k, passed in checks.items() if not passed]
            assert_lineage_follows_the_graph(assets, results)
        tables[mode] = {t: table_rows(read_table(spark, config.table_path("shop", t)),
                                      drop=("_norm_normalized_at",)) for t in DEDUP_TABLES}
    assert tables["single_run"] == tables["per_partition"]
    current = read_table(spark, config.table_path("shop", "customers"))
    assert current.count() == current.select("id").distinct().count() > 0
    history = read_table(spark, config.table_path("shop", "customers_scd"))
    assert history.count() > current.count()  # update_ratio 0.6: some customers have two versions


def assert_lineage_follows_the_graph(assets, results):
    """Every key column's lineage names the asset's own parent in the graph (history, for dedup children);
    only data columns point further up, at the raw JSON (`_norm_data`) they are extracted from."""
    lineage = {m.asset_key: m.metadata["dagster/column_lineage"].lineage.deps_by_column for r in results
               for m in r.asset_materializations_for_node("shop_normalize_loads")
               if "dagster/column_lineage" in m.metadata}
    assert dg.AssetKey(["shop", "orders__line_items"]) in lineage
    for key, deps in lineage.items():
        named = {dep.asset_key for column_deps in deps.values() for dep in column_deps
                 if dep.column_name != "_norm_data"}
        assert named <= set(assets.asset_deps[key]), (key, named)
    items = lineage[dg.AssetKey(["shop", "orders__line_items"])]
    assert items["_norm_parent_id"] == [dg.TableColumnDep(dg.AssetKey(["shop", "orders_scd"]), "_norm_id")]
