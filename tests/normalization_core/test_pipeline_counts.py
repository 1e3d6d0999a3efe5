"""NULLED counts per typed table, observed while writing (no extra pass)."""
from __future__ import annotations

import json

from lakenorm_app.samples import write_catalog
from normalization_core.configuration.config import parse_config
from normalization_core.io.delta import read_table
from normalization_core.passes.normalize import normalize_load, normalize_loads


def shop(tmp_path):
    (tmp_path / "landing").mkdir()
    write_catalog(tmp_path / "catalog.json")
    return parse_config({"warehouse": "wh", "sources": [{
        "name": "shop", "landing": "landing", "catalog": "catalog.json",
        "streams": {"orders": {"destination_sync_mode": "append"}}}]}, base_dir=tmp_path)


def land(tmp_path, load_id: str, created_at: str, lines: list[str]) -> None:
    package = tmp_path / "landing" / load_id
    package.mkdir()
    (package / "orders.jsonl").write_text("\n".join(lines) + "\n")
    (package / "_manifest.json").write_text(json.dumps({
        "load_id": load_id, "created_at": created_at, "source": "shop", "format": "records",
        "streams": {"orders": {"files": ["orders.jsonl"]}}}))


def test_nulled_counts_per_table_equal_the_bad_values_of_the_package(spark, tmp_path, load_case):
    case = load_case("dagster/bad_values_package.json")
    config = shop(tmp_path)
    land(tmp_path, "L1", "2026-01-01T00:00:00Z", case["lines"])
    orders = normalize_load(spark, config, "shop", "L1").streams["orders"]
    expected = case["expected"]
    nulled = orders.nulled
    assert {t: n.values for t, n in nulled.items() if t in expected["nulled_values"]} == expected["nulled_values"]
    assert {t: n.rows for t, n in nulled.items() if t in expected["nulled_rows"]} == expected["nulled_rows"]
    changes = read_table(spark, config.table_path("shop", "orders")).selectExpr(
        "explode(_norm_meta.changes) AS c").where("c.change = 'NULLED'").count()
    assert changes == expected["nulled_values"]["orders"]


def test_a_pass_of_several_loads_counts_rows_and_nulled_values_per_load(spark, tmp_path, load_case):
    lines = load_case("dagster/bad_values_package.json")["lines"]
    config = shop(tmp_path)
    land(tmp_path, "L1", "2026-01-01T00:00:00Z", lines)
    land(tmp_path, "L2", "2026-01-02T00:00:00Z", lines[:1])  # total "abc"; qty "two", price "cheap"
    land(tmp_path, "L3", "2026-01-03T00:00:00Z", ['{"id": 9, "total": 1.5, "line_items": [{"qty": 1}]}'])
    results = {r.load_id: r.streams["orders"] for r in normalize_loads(spark, config, "shop", ["L1", "L2", "L3"])}

    assert {k: (r.typed_rows["orders"], r.typed_rows["orders__line_items"]) for k, r in results.items()} == {
        "L1": (3, 2), "L2": (1, 2), "L3": (1, 1)}
    nulled = {k: {t: (n.values, n.rows) for t, n in r.nulled.items()} for k, r in results.items()}
    assert {k: (n["orders"], n["orders__line_items"], n["orders__tags"]) for k, n in nulled.items()} == {
        "L1": ((3, 3), (2, 2), (0, 0)), "L2": ((1, 1), (2, 2), (0, 0)), "L3": ((0, 0), (0, 0), (0, 0))}
