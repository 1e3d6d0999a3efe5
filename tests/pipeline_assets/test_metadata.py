"""Materialization metadata (SPEC §8): row counts, schema, column lineage, NULLED and rejected counts."""
from __future__ import annotations

import dagster as dg
import pytest

from pipeline_assets.factories import build_source_assets
from pipeline_assets.resources import SparkSessionResource


def materialize_case(config, case):
    assets = build_source_assets(config, config.source("shop"), ["orders"])
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("shop_load_ids", [case["load_id"]])
        result = dg.materialize([assets], instance=instance, partition_key=case["load_id"],
                                resources={"spark": SparkSessionResource(spark_conf=config.spark)})
    assert result.success
    mats = {m.asset_key.path[-1]: m.metadata for m in result.asset_materializations_for_node("shop_normalize_loads")}
    return mats, result.get_asset_check_evaluations()


@pytest.mark.slow
def test_every_table_reports_counts_schema_lineage_and_nulled_values(spark, bad_values_shop):
    config, case = bad_values_shop
    expected = case["expected"]
    mats, checks = materialize_case(config, case)

    raw = mats["_norm_raw_orders"]
    assert raw["dagster/row_count"].value == expected["raw_rows"]
    assert raw["rejected_lines"].value == expected["rejected_lines"]
    assert "_norm_error" in {c.name for c in raw["dagster/column_schema"].schema.columns}
    for table, rows in expected["rows"].items():
        assert mats[table]["dagster/row_count"].value == rows, table
        assert mats[table]["dagster/partition_row_count"].value == rows, table
    for table, values in expected["nulled_values"].items():
        assert mats[table]["nulled_values"].value == values, table
        assert mats[table]["nulled_rows"].value == expected["nulled_rows"][table], table
        assert mats[table]["load_id"].value == case["load_id"]

    orders = {c.name: c for c in mats["orders"]["dagster/column_schema"].schema.columns}
    assert orders["total"].type == "double" and orders["_norm_id"].type == "string"
    assert orders["_norm_meta"].type.startswith("struct<changes:array<struct<field:string")
    for table, paths in expected["json_paths"].items():
        columns = {c.name: c for c in mats[table]["dagster/column_schema"].schema.columns}
        for column, path in paths.items():
            assert columns[column].description == f"from {path}", (table, column)

    raw_key = dg.AssetKey(["shop", "_norm_raw_orders"])
    lineage = mats["orders"]["dagster/column_lineage"].lineage.deps_by_column
    assert lineage["total"] == [dg.TableColumnDep(raw_key, "_norm_data")]
    assert lineage["_norm_raw_id"] == [dg.TableColumnDep(raw_key, "_norm_raw_id")]
    items = mats["orders__line_items"]["dagster/column_lineage"].lineage.deps_by_column
    assert items["qty"] == [dg.TableColumnDep(raw_key, "_norm_data")]
    assert items["_norm_parent_id"] == [dg.TableColumnDep(dg.AssetKey(["shop", "orders"]), "_norm_id")]
    discounts = mats["orders__line_items__discounts"]["dagster/column_lineage"].lineage.deps_by_column
    assert discounts["_norm_root_id"] == [dg.TableColumnDep(dg.AssetKey(["shop", "orders__line_items"]),
                                                            "_norm_root_id")]  # through its parent in the graph

    evaluations = {(e.asset_key.path[-1], e.check_name): e for e in checks}
    assert set(evaluations) == {("_norm_raw_orders", "no_rejected_lines"), ("orders", "rows_typed_per_load"),
                                ("orders__line_items", "no_orphan_child_rows"),
                                ("orders__line_items__discounts", "no_orphan_child_rows"),
                                ("orders__tags", "no_orphan_child_rows")}
    rejected = evaluations.pop(("_norm_raw_orders", "no_rejected_lines"))
    assert not rejected.passed and rejected.severity == dg.AssetCheckSeverity.WARN
    assert all(e.passed and e.severity == dg.AssetCheckSeverity.ERROR for e in evaluations.values())
    per_load = [evaluations[("orders", "rows_typed_per_load")], rejected,
                evaluations[("orders__tags", "no_orphan_child_rows")]]
    assert [e.partition for e in per_load] == [case["load_id"]] * 3  # a one-load run: tied to its partition
    rows_check = evaluations[("orders", "rows_typed_per_load")].metadata
    assert rows_check["valid_raw_lines"].value == rows_check["typed_rows"].value == expected["rows"]["orders"]


def test_a_typed_tables_per_load_metadata_shows_what_the_contract_discarded():
    from normalization_core.passes.results import LoadResult, StreamResult
    from normalization_core.transform.discard import DiscardedCounts
    from pipeline_assets.metadata import typed_load_counts

    discarded = {"s": DiscardedCounts(rows=1, values=2)}
    results = [LoadResult("src", "1.1", {"s": StreamResult("s", "_dlt_raw_s", 4, 0, typed_rows={"s": 3, "s__items": 5},
                                                           discarded=discarded)}),
               LoadResult("src", "2.1", {})]
    counts = typed_load_counts(results, "s", "s")
    assert (counts["1.1"]["rows_written"], counts["1.1"]["discarded_rows"], counts["1.1"]["discarded_values"]) == (3, 1, 2)
    assert (counts["2.1"]["discarded_rows"], counts["2.1"]["discarded_values"]) == (0, 0)
    assert typed_load_counts(results, "s", "s__items")["1.1"]["discarded_rows"] == 0
