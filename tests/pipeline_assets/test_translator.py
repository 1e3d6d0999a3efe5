"""The translator (SPEC §8): a project's own keys, groups, owners, tags, automation and deps for lakenorm's tables,
followed by everything built from the configuration; upstream asset keys of the configuration as raw deps."""
from __future__ import annotations

import dagster as dg
import pytest

from lakenorm_app.samples import write_catalog
from normalization_core.configuration.config import parse_config
from pipeline_assets.definitions import build_definitions
from pipeline_assets.factories import source_job_name
from pipeline_assets.translator import LakenormTableProps, LakenormTranslator
from tests.pipeline_assets.conftest import write_case_package

EXTRACTOR = dg.AssetKey(["dlt", "shop_orders"])


class LakeTranslator(LakenormTranslator):
    """Keys under `lake`, a group per kind of table, an owner, a tag, eager automation of the stream tables, and
    a dependency the translator adds to every raw table; it also tries to drop deps and partitions, which the
    factories own."""

    def get_asset_spec(self, props: LakenormTableProps) -> dg.AssetSpec:
        spec = super().get_asset_spec(props)
        raw = props.kind == "raw"
        return spec.replace_attributes(
            key=spec.key.with_prefix("lake"), group_name=f"shop_{props.kind}", owners=["team:data"],
            tags={**spec.tags, "layer_of": props.kind}, deps=[*spec.deps, EXTRACTOR] if raw else [],
            automation_condition=None if props.kind == "system" else dg.AutomationCondition.eager(),
            partitions_def=None)


class Merging(LakenormTranslator):
    def get_asset_spec(self, props: LakenormTableProps) -> dg.AssetSpec:
        return super().get_asset_spec(props).replace_attributes(key=["shop", "everything"])


@pytest.fixture
def config(tmp_path):
    (tmp_path / "landing").mkdir()
    write_catalog(tmp_path / "catalog.json")  # orders, customers: append_dedup; events: append
    return parse_config({"warehouse": "wh", "sources": [{
        "name": "shop", "landing": "landing", "catalog": "catalog.json", "upstream": ["dlt/shop"],
        "streams": {"events": {"upstream": [["segment", "events"]]}}}]}, base_dir=tmp_path)


def test_a_translator_moves_every_table_and_what_is_built_from_them(config):
    defs = build_definitions(config, translator=LakeTranslator())
    graph = defs.resolve_asset_graph()
    upstream = {EXTRACTOR, dg.AssetKey(["dlt", "shop"]), dg.AssetKey(["segment", "events"])}
    keys = {k.to_user_string() for k in graph.get_all_asset_keys() - upstream}
    assert {"lake/shop/orders", "lake/shop/orders_scd", "lake/shop/_norm_raw_orders", "lake/shop/_norm_loads"} <= keys
    assert all(k.startswith("lake/shop/") for k in keys), keys

    def node(key: str):
        return graph.get(dg.AssetKey.from_user_string(key))

    assert node("lake/shop/orders__line_items").parent_keys == {dg.AssetKey(["lake", "shop", "orders_scd"])}
    assert node("lake/shop/orders_scd").parent_keys == {dg.AssetKey(["lake", "shop", "_norm_raw_orders"])}
    assert node("lake/shop/_norm_raw_orders").parent_keys == {dg.AssetKey(["dlt", "shop"]), EXTRACTOR}
    assert node("lake/shop/_norm_raw_events").parent_keys == {dg.AssetKey(["segment", "events"]), EXTRACTOR}
    orders = node("lake/shop/orders")
    assert (orders.group_name, orders.owners, orders.tags["layer_of"]) == ("shop_current", ["team:data"], "current")
    assert orders.automation_condition == dg.AutomationCondition.eager()
    assert orders.partitions_def.name == "shop_load_ids"  # forced: the jobs and the sensor depend on it
    assert (orders.metadata["lakenorm/source"], orders.metadata["lakenorm/table"]) == ("shop", "orders")
    assert node("lake/shop/_norm_loads").group_name == "shop_system"
    assert node("lake/shop/_norm_loads").automation_condition is None
    assert {(k.asset_key.to_user_string(), k.name) for k in graph.asset_check_keys} >= {
        ("lake/shop/orders", "primary_key_unique"), ("lake/shop/_norm_raw_orders", "no_rejected_lines"),
        ("lake/shop/orders_scd", "one_current_version_per_key"), ("lake/shop/events", "rows_typed_per_load")}
    job = defs.resolve_job_def(source_job_name(config.source("shop")))
    assert {k.to_user_string() for k in job.asset_layer.selected_asset_keys} == {
        k for k in keys if "/_norm_loads" not in k and "/_norm_versions" not in k}
    observed = defs.resolve_job_def("shop_observe_system_tables").asset_layer.selected_asset_keys
    assert {k.to_user_string() for k in observed} == {"lake/shop/_norm_loads", "lake/shop/_norm_versions"}


def test_the_default_translation_is_the_sources_own_keys_with_the_configured_upstream(config):
    graph = build_definitions(config).resolve_asset_graph()
    raw = graph.get(dg.AssetKey(["shop", "_norm_raw_orders"]))
    assert (raw.parent_keys, raw.group_name, raw.owners) == ({dg.AssetKey(["dlt", "shop"])}, "shop", [])
    assert graph.get(dg.AssetKey(["shop", "_norm_raw_events"])).parent_keys == {dg.AssetKey(["segment", "events"])}


def test_two_tables_on_one_key_are_refused_naming_both(config):
    with pytest.raises(dg.DagsterInvalidDefinitionError, match=r"tables shop\.\w+ and shop\.\w+ were given the same "
                                                                 r"asset key 'shop/everything' by the translator"):
        build_definitions(config, translator=Merging())


def test_a_code_location_loaded_again_sees_a_new_stream(config):
    """Definitions are reused while nothing they are built from changed (Dagster loads a location twice)."""
    first = set(build_definitions(config).resolve_all_asset_keys())
    assert set(build_definitions(config).resolve_all_asset_keys()) == first
    write_case_package(config.source("shop").landing, {"load_id": "101", "lines": ['{"id": 1}']}, stream="refunds")
    keys = set(build_definitions(config).resolve_all_asset_keys())
    assert keys - first == {dg.AssetKey(["shop", "_norm_raw_refunds"])}
