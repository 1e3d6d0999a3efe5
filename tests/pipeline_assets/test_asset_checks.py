"""Asset check results for the loads of a run: passing on a clean load, naming keys when broken."""
from __future__ import annotations

import dagster as dg
from delta.tables import DeltaTable

from normalization_core.columns import NATIVE
from normalization_core.configuration.config import parse_config
from normalization_core.io.delta import read_table
from normalization_core.passes.normalize import normalize_load
from normalization_core.passes.results import LoadResult, StreamResult
from normalization_core.plans.source_tables import SourceTables
from normalization_core.plans.stream_plans import stream_plans
from pipeline_assets.asset_checks import (NO_ORPHANS, NO_OVERLAP, NO_REJECTED, ONE_CURRENT, ROWS_TYPED, UNIQUE_KEY,
                                        LoadChecks, check_results, history_check_results)
from lakenorm_app.samples import write_catalog


def evaluate(spark, config, results):
    """Each check's result for a run of one load (a per-load check's, that load's)."""
    source = config.source("shop")
    found = {}
    for r in check_results(spark, SourceTables(config, source), stream_plans(source), results):
        if isinstance(r, LoadChecks):
            (r,) = r.by_load.values()
        found[(r.asset_key.path[-1], r.check_name)] = r
    return found


def test_checks_pass_on_a_load_then_name_the_load_and_the_orphans_once_parent_rows_are_gone(spark, bad_values_shop):
    config, case = bad_values_shop
    result = normalize_load(spark, config, "shop", case["load_id"])
    clean = evaluate(spark, config, [result])
    assert set(clean) == {("_norm_raw_orders", NO_REJECTED), ("orders", ROWS_TYPED), ("orders__line_items", NO_ORPHANS),
                          ("orders__line_items__discounts", NO_ORPHANS), ("orders__tags", NO_ORPHANS)}
    rejected = clean.pop(("_norm_raw_orders", NO_REJECTED))  # the case has 2 rejected lines: a warning
    assert not rejected.passed and rejected.severity == dg.AssetCheckSeverity.WARN
    assert rejected.metadata["rejected_lines"].value == 2 and rejected.metadata["load_id"].value == case["load_id"]
    assert rejected.metadata["offending_keys"].value == [case["load_id"]]
    assert all(r.passed for r in clean.values())

    items_of_order_1 = sorted(r["_norm_id"] for r in read_table(spark, config.table_path("shop", "orders__line_items"))
                              .select("_norm_id").collect())  # the case's 2 line items, both of order 1
    DeltaTable.forPath(spark, config.table_path("shop", "orders")).delete("id = 1")
    broken = evaluate(spark, config, [result])
    rows = broken[("orders", ROWS_TYPED)]
    assert not rows.passed
    assert rows.metadata["offending_keys"].value == [case["load_id"]]
    assert (rows.metadata["valid_raw_lines"].value, rows.metadata["typed_rows"].value) == (3, 2)
    items = broken[("orders__line_items", NO_ORPHANS)]
    assert not items.passed and items.metadata["failures"].value == 2
    assert items.metadata["offending_keys"].value == items_of_order_1
    assert not broken[("orders__tags", NO_ORPHANS)].passed
    assert broken[("orders__line_items__discounts", NO_ORPHANS)].passed


def test_a_duplicated_primary_key_in_a_dedup_current_table_is_named(spark, tmp_path):
    (tmp_path / "landing").mkdir()
    write_catalog(tmp_path / "catalog.json")  # customers: append_dedup on primary key `id`
    config = parse_config({"warehouse": "wh", "sources": [
        {"name": "shop", "landing": "landing", "catalog": "catalog.json"}]}, base_dir=tmp_path)
    spark.createDataFrame([(1, "a"), (1, "b"), (2, "c")], "id bigint, email string").write.format("delta").save(
        config.table_path("shop", "customers"))
    written = StreamResult("customers", "_norm_raw_customers", 3, 0, typed_rows={"customers": 3})
    checks = evaluate(spark, config, [LoadResult("shop", "L1", {"customers": written})])
    assert set(checks) == {("_norm_raw_customers", NO_REJECTED), ("customers", UNIQUE_KEY)}
    assert checks[("_norm_raw_customers", NO_REJECTED)].passed
    assert not checks[("customers", UNIQUE_KEY)].passed
    assert checks[("customers", UNIQUE_KEY)].severity == dg.AssetCheckSeverity.ERROR
    assert checks[("customers", UNIQUE_KEY)].metadata["offending_keys"].value == ["id=1"]


def test_history_checks_report_keys_of_a_broken_history(spark, tmp_path, load_case):
    case = load_case("checks/tables.json")["history"]
    history, current = str(tmp_path / "customers_scd"), str(tmp_path / "customers")
    spark.createDataFrame([tuple(r) for r in case["two_current"]["rows"]], case["schema"]).write.format("delta").save(history)
    spark.createDataFrame([tuple(r) for r in case["two_current"]["current"]], case["current_schema"]).write.format(
        "delta").save(current)
    key = ["shop", "customers_scd"]
    results = {r.check_name: r for r in history_check_results(spark, history, current, NATIVE, key, "customers")}
    assert not results[ONE_CURRENT].passed
    assert results[ONE_CURRENT].metadata["offending_keys"].value == case["two_current"]["offending"]
    assert results[NO_OVERLAP].passed
