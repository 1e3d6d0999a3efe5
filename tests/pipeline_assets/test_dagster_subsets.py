"""Dagster: one stream's assets materialized alone, checks run alone (can_subset on the source's op)."""
from __future__ import annotations

import dagster as dg
import pytest

from lakenorm_app.samples import SampleSpec, write_catalog, write_sample_packages
from normalization_core.configuration.config import parse_config
from normalization_core.io.delta import is_delta_table, read_table
from normalization_core.passes.normalize import normalize_loads
from normalization_core.passes.pending import pending_packages
from pipeline_assets.factories import build_source_assets
from pipeline_assets.resources import SparkSessionResource

STREAMS = ["customers", "events", "orders"]
ORDERS_TABLES = {"_norm_raw_orders", "orders_scd", "orders", "orders__line_items", "orders__line_items__discounts",
                 "orders__tags"}
ALL_TABLES = ORDERS_TABLES | {"_norm_raw_customers", "customers_scd", "customers", "_norm_raw_events", "events"}


def shop_config(tmp_path, warehouse: str):
    return parse_config({"warehouse": warehouse, "sources": [
        {"name": "shop", "landing": "landing", "catalog": "catalog.json"}]}, base_dir=tmp_path)


@pytest.fixture
def two_shops(tmp_path):
    """Two warehouses over the same landing folder of two sample loads: (subset-run config, full-run config, ids)."""
    (tmp_path / "landing").mkdir()
    write_catalog(tmp_path / "catalog.json")
    ids = write_sample_packages(tmp_path / "landing", SampleSpec(packages=2, orders=6, customers=3, events=4))
    return shop_config(tmp_path, "wh_subsets"), shop_config(tmp_path, "wh_full"), ids


def stream_keys(assets: dg.AssetsDefinition, tables: set[str]) -> list[dg.AssetKey]:
    return [k for k in assets.keys if k.path[-1] in tables]


def run(assets, instance, config, load_id, selection, tags=None) -> dg.ExecuteInProcessResult:
    result = dg.materialize([assets], instance=instance, partition_key=load_id, selection=selection, tags=tags,
                            resources={"spark": SparkSessionResource(spark_conf=config.spark)})
    assert result.success
    return result


def materialized(result) -> set[str]:
    return {m.asset_key.path[-1] for m in result.asset_materializations_for_node("shop_normalize_loads")}


def rows(spark, config, table: str) -> list:
    """The table's rows without the write-time columns (`*_normalized_at`; the registry's `table_versions`, which
    count the commits a table had), sorted."""
    df = read_table(spark, config.table_path("shop", table))
    kept = [c for c in df.columns if not c.endswith("normalized_at") and c != "table_versions"]
    return sorted(df.select(kept).collect(), key=repr)


@pytest.mark.slow
def test_one_stream_alone_then_the_rest_equals_a_full_run(spark, two_shops):
    config, full, (first, second) = two_shops
    assets = build_source_assets(config, config.source("shop"), STREAMS)
    orders = dg.AssetSelection.assets(*stream_keys(assets, ORDERS_TABLES))
    rest = dg.AssetSelection.assets(*stream_keys(assets, ALL_TABLES - ORDERS_TABLES))
    registry = config.table_path("shop", "_norm_loads")
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("shop_load_ids", [first, second])
        alone = run(assets, instance, config, first, orders)
        assert materialized(alone) == ORDERS_TABLES
        checks = {(e.asset_key.path[-1], e.check_name) for e in alone.get_asset_check_evaluations()}
        assert checks and {table for table, _ in checks} <= ORDERS_TABLES
        for table in ALL_TABLES - ORDERS_TABLES:  # other streams: neither read nor written
            assert not is_delta_table(spark, config.table_path("shop", table)), table
        registered = read_table(spark, registry).select("load_id", "stream").collect()
        assert sorted(tuple(r) for r in registered) == [(first, "orders")]
        pending = pending_packages(spark, config, config.source("shop")).packages
        assert [p.load_id for p in pending] == [first, second]  # first: not every stream yet

        before = {t: rows(spark, config, t) for t in ORDERS_TABLES}
        run(assets, instance, config, first, orders)  # the same stream again: nothing changes
        assert {t: rows(spark, config, t) for t in ORDERS_TABLES} == before

        assert materialized(run(assets, instance, config, first, rest)) == ALL_TABLES - ORDERS_TABLES
        assert [p.load_id for p in pending_packages(spark, config, config.source("shop")).packages] == [second]
        run(assets, instance, config, second, orders)
        run(assets, instance, config, second, rest)
        status = instance.get_status_by_partition(dg.AssetKey(["shop", "events"]), [first, second],
                                                  assets.partitions_def)
        assert set(status.values()) == {dg.AssetPartitionStatus.MATERIALIZED}
    for load_id in (first, second):  # the reference: each load's full run, by the library the op calls
        normalize_loads(spark, full, "shop", [load_id])
    for table in sorted(ALL_TABLES) + ["_norm_loads"]:
        assert rows(spark, config, table) == rows(spark, full, table), table


@pytest.mark.slow
def test_checks_run_alone_per_partition_without_materializing(spark, two_shops):
    config, _, (first, _) = two_shops
    assets = build_source_assets(config, config.source("shop"), STREAMS)
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("shop_load_ids", [first])
        run(assets, instance, config, first, None)
        events_version = read_table(spark, config.table_path("shop", "_norm_raw_events")).count()
        check_keys = [k for k in assets.check_keys if k.asset_key.path[-1] in {"_norm_raw_events", "events"}]
        checks_alone = dg.AssetSelection.checks(*check_keys)
        # A run of checks alone has no partition key (Dagster finds no partitioned asset in the selection):
        # the partition goes in the run's tag, as the UI's launchpad does.
        result = run(assets, instance, config, None, checks_alone, tags={"dagster/partition": first})
        assert not materialized(result)
        evaluations = {(e.asset_key.path[-1], e.check_name): e for e in result.get_asset_check_evaluations()}
        assert set(evaluations) == {(k.asset_key.path[-1], k.name) for k in check_keys} == {
            ("_norm_raw_events", "no_rejected_lines"), ("events", "rows_typed_per_load")}
        rejected = evaluations[("_norm_raw_events", "no_rejected_lines")]
        assert rejected.passed and rejected.metadata["rejected_lines"].value == 0
        assert rejected.partition == first
        typed = evaluations[("events", "rows_typed_per_load")]
        assert typed.passed and typed.metadata["load_id"].value == first and typed.partition == first
        history = [k for k in assets.check_keys if k.asset_key.path[-1] == "orders_scd"]
        table_wide = run(assets, instance, config, None, dg.AssetSelection.checks(*history),
                         tags={"dagster/partition": first}).get_asset_check_evaluations()
        assert {(e.check_name, e.partition, e.passed) for e in table_wide} == {
            ("one_current_version_per_key", None, True), ("non_overlapping_validity", None, True)}
        assert read_table(spark, config.table_path("shop", "_norm_raw_events")).count() == events_version
