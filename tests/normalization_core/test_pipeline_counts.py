"""NULLED counts per typed table, observed while writing (no extra pass)."""
from __future__ import annotations

import json

from normalization_core.config import parse_config
from normalization_core.io.delta import read_table
from normalization_core.pipeline import normalize_load
from normalization_core.samples import write_catalog


def test_nulled_counts_per_table_equal_the_bad_values_of_the_package(spark, tmp_path, load_case):
    case = load_case("dagster/bad_values_package.json")
    (tmp_path / "landing" / "L1").mkdir(parents=True)
    write_catalog(tmp_path / "catalog.json")
    config = parse_config({"warehouse": "wh", "sources": [{
        "name": "shop", "landing": "landing", "catalog": "catalog.json",
        "streams": {"orders": {"destination_sync_mode": "append"}}}]}, base_dir=tmp_path)
    package = tmp_path / "landing" / "L1"
    (package / "orders.jsonl").write_text("\n".join(case["lines"]) + "\n")
    (package / "_manifest.json").write_text(json.dumps({
        "load_id": "L1", "created_at": "2026-01-01T00:00:00Z", "source": "shop", "format": "records",
        "streams": {"orders": {"files": ["orders.jsonl"]}}}))
    orders = normalize_load(spark, config, "shop", "L1").streams["orders"]
    expected = case["expected"]
    assert {t: n.values for t, n in orders.nulled.items() if t in expected["nulled_values"]} == expected["nulled_values"]
    assert {t: n.rows for t, n in orders.nulled.items() if t in expected["nulled_rows"]} == expected["nulled_rows"]
    changes = read_table(spark, config.table_path("shop", "orders")).selectExpr(
        "explode(_norm_meta.changes) AS c").where("c.change = 'NULLED'").count()
    assert changes == expected["nulled_values"]["orders"]
