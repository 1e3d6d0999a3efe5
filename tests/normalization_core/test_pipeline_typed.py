"""Typed root and child tables written per load (SPEC §4.2, §5.1, §6): counts, links, dispositions."""
from __future__ import annotations

import gzip
import json

import pytest

from lakenorm_app.samples import SampleSpec, write_catalog, write_sample_packages
from normalization_core.configuration.config import parse_config
from normalization_core.io.delta import read_table
from normalization_core.passes.normalize import normalize_load


def shop(tmp_path, streams=None):
    (tmp_path / "landing").mkdir()
    write_catalog(tmp_path / "catalog.json")
    source = {"name": "shop", "landing": "landing", "catalog": "catalog.json"}
    if streams:
        source["streams"] = streams
    return parse_config({"warehouse": "wh", "sources": [source]}, base_dir=tmp_path)


def landed_orders(landing, load_id):
    lines = gzip.decompress((landing / load_id / "orders/part-00000.jsonl.gz").read_bytes()).decode().splitlines()
    return [json.loads(line) for line in lines]


@pytest.mark.slow
def test_orders_root_and_children_match_the_input_and_link_up(spark, tmp_path):
    cfg = shop(tmp_path, streams={"orders": {"destination_sync_mode": "append"}})  # every record, not dedup
    landing = cfg.source("shop").landing
    ids = write_sample_packages(landing, SampleSpec(packages=2, orders=25, customers=5, events=5))
    for load_id in ids + ids[:1]:  # the re-run of the first load must change nothing
        normalize_load(spark, cfg, "shop", load_id)
    orders = [o for load_id in ids for o in landed_orders(landing, load_id)]
    table = lambda name: read_table(spark, cfg.table_path("shop", name))  # noqa: E731

    root = table("orders")
    assert root.count() == len(orders)
    assert table("orders__line_items").count() == sum(len(o["line_items"]) for o in orders)
    assert table("orders__line_items__discounts").count() == sum(
        len(i["discounts"]) for o in orders for i in o["line_items"])
    assert table("orders__tags").count() == sum(len(o["tags"]) for o in orders)
    assert dict(root.dtypes)["customer__address__city"] == "string"
    assert dict(root.dtypes)["updated_at"] == "timestamp"
    assert dict(table("orders__line_items").dtypes)["qty"] == "bigint"

    items, discounts = table("orders__line_items"), table("orders__line_items__discounts")
    assert items.join(root, items._norm_parent_id == root._norm_id, "left_anti").count() == 0
    assert discounts.join(items, discounts._norm_parent_id == items._norm_id, "left_anti").count() == 0
    assert discounts.join(root, discounts._norm_root_id == root._norm_id, "left_anti").count() == 0
    assert root.select("_norm_id").distinct().count() == len(orders)

    first = landed_orders(landing, ids[0])[0]
    row = root.where(root._norm_load_id == ids[0]).orderBy("_norm_raw_id").collect()
    assert first["id"] in {r["id"] for r in row}
    loads = {(r["load_id"], r["stream"]): r for r in table("_norm_loads").collect()}
    assert loads[(ids[0], "orders")]["rows"]["orders"] == 25
    assert loads[(ids[0], "orders")]["schema_version_hash"]


@pytest.mark.slow
def test_overwrite_keeps_only_the_newest_load_and_an_older_load_changes_nothing(spark, tmp_path):
    cfg = shop(tmp_path, streams={"events": {"destination_sync_mode": "overwrite"}})
    ids = write_sample_packages(cfg.source("shop").landing, SampleSpec(packages=2, orders=2, customers=2, events=6))
    normalize_load(spark, cfg, "shop", ids[1])
    normalize_load(spark, cfg, "shop", ids[0])  # arrives late: older than what the table shows
    events = read_table(spark, cfg.table_path("shop", "events"))
    assert {r["_norm_load_id"] for r in events.collect()} == {ids[1]}
    assert events.count() == 6
