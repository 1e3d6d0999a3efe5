"""The asset catalog: descriptions say key, cursor, disposition, convention and landing; tags; no owners."""
from __future__ import annotations

import dagster as dg

from lakenorm_app.samples import write_catalog
from normalization_core.configuration.config import parse_config
from pipeline_assets.definitions import build_definitions


def specs_of(tmp_path) -> dict[str, dg.AssetSpec]:
    (tmp_path / "landing").mkdir()
    write_catalog(tmp_path / "catalog.json")  # orders, customers: append_dedup on `id`, cursor `updated_at`
    config = parse_config({"warehouse": "wh", "sources": [
        {"name": "shop", "landing": "landing", "catalog": "catalog.json"}]}, base_dir=tmp_path)
    defs = build_definitions(config)
    return {spec.key.to_user_string(): spec for assets in defs.assets if isinstance(assets, dg.AssetsDefinition)
            for spec in assets.specs}  # (the observed registry and versions tables are SourceAssets)


def test_descriptions_and_tags_carry_what_a_user_needs(tmp_path):
    specs = specs_of(tmp_path)
    landing = str(tmp_path / "landing")
    for key in ("shop/_norm_raw_orders", "shop/orders_scd", "shop/orders", "shop/orders__line_items"):
        description = specs[key].description
        for fact in ("Primary key: `id`", "Cursor: `updated_at`", "Disposition: `append_dedup`",
                     "Naming convention: `native`", landing):
            assert fact in description, (key, fact)
        assert specs[key].tags["lakenorm/convention"] == "native"
        assert specs[key].tags["lakenorm/disposition"] == "append_dedup"
        assert not specs[key].owners  # the configuration names none
    assert "Built from `orders_scd`" in specs["shop/orders__line_items"].description
    assert "Built from `orders__line_items`" in specs["shop/orders__line_items__discounts"].description
    assert specs["shop/orders__line_items"].tags["lakenorm/layer"] == "child"
    assert specs["shop/orders_scd"].tags["lakenorm/layer"] == "history"
    assert specs["shop/_norm_raw_orders"].tags["lakenorm/layer"] == "raw"
