"""Declarative Automation of a source (`automation: on_upstream`): which partitions Dagster's automation asks for,
evaluated as its sensor does (no run: end to end under a real daemon in tests/deploy/test_daemon_concurrency.py)."""
from __future__ import annotations

import dagster as dg
import pytest

from lakenorm_app.samples import SampleSpec, write_catalog, write_sample_packages
from normalization_core.configuration.config import parse_config
from pipeline_assets.automation import new_load_condition
from pipeline_assets.definitions import build_definitions
from pipeline_assets.translator import LakenormTableProps, LakenormTranslator

UPSTREAM = dg.AssetKey(["extract", "shop"])


def automated_config(root):
    """An automated shop whose landing the asset extract/shop writes."""
    (root / "landing").mkdir()
    write_catalog(root / "catalog.json")
    return parse_config({"warehouse": "wh", "sources": [
        {"name": "shop", "landing": "landing", "catalog": "catalog.json", "upstream": ["extract/shop"],
         "automation": "on_upstream"}]}, base_dir=root)


@pytest.fixture
def automated(tmp_path):
    """(definitions of an automated shop whose landing the asset extract/shop writes, its landing)."""
    config = automated_config(tmp_path)
    return dg.Definitions.merge(build_definitions(config), dg.Definitions(assets=[dg.AssetSpec(UPSTREAM)])), \
        tmp_path / "landing"


def requested(defs, instance, cursor):
    """(the load IDs each table asset is requested for, how many assets, the cursor of the next evaluation)."""
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor)
    tables = [k for k in defs.resolve_asset_graph().get_all_asset_keys() if k.path[0] == "shop"]
    asked = {tuple(sorted(result.get_requested_partitions(k))) for k in tables if result.get_num_requested(k)}
    return asked, sum(1 for k in tables if result.get_num_requested(k)), result.cursor


def test_new_loads_are_requested_once_their_upstream_materialized_and_never_again_on_its_updates(automated):
    defs, _ = automated
    tables = {k for k in defs.resolve_asset_graph().get_all_asset_keys() if k.path[0] == "shop"}
    observed = {dg.AssetKey(["shop", "_norm_loads"]), dg.AssetKey(["shop", "_norm_versions"])}
    with dg.instance_for_test() as instance:
        asked, _, cursor = requested(defs, instance, None)  # the condition's first evaluation
        instance.add_dynamic_partitions("shop_load_ids", ["L1", "L2"])
        asked, _, cursor = requested(defs, instance, cursor)
        assert not asked  # the upstream asset never materialized: nothing to wait for yet
        instance.report_runless_asset_event(dg.AssetMaterialization(UPSTREAM))
        asked, count, cursor = requested(defs, instance, cursor)
        assert asked == {("L1", "L2")} and count == len(tables - observed)  # every table, both loads: one backfill
        instance.report_runless_asset_event(dg.AssetMaterialization(UPSTREAM))
        asked, _, cursor = requested(defs, instance, cursor)
        assert not asked  # an update of an unpartitioned upstream does not ask for every load again
        instance.add_dynamic_partitions("shop_load_ids", ["L3"])
        asked, _, cursor = requested(defs, instance, cursor)
        assert asked == {("L3",)}


def test_an_automated_source_registers_loads_with_its_sensor_and_runs_them_by_its_automation(automated):
    defs, landing = automated
    ids = write_sample_packages(landing, SampleSpec(packages=2, orders=1, customers=1, events=1))
    graph = defs.resolve_asset_graph()
    assert UPSTREAM in graph.get(dg.AssetKey(["shop", "_norm_raw_orders"])).parent_keys
    automation = defs.resolve_sensor_def("shop_automation")
    assert isinstance(automation, dg.AutomationConditionSensorDefinition)
    assert automation.default_status == dg.DefaultSensorStatus.RUNNING
    assert {s.name for s in defs.schedules} == {"shop_maintenance"}  # no polling: the sensor registers
    sensor = defs.resolve_sensor_def("shop_landing_sensor")
    with dg.instance_for_test() as instance:
        tick = sensor(dg.build_sensor_context(instance=instance, definitions=defs))
    assert [list(r.partition_keys) for r in tick.dynamic_partitions_requests] == [ids]
    assert not tick.run_requests


class Prefixed(LakenormTranslator):
    """Keys under `lake`; the raw tables of `events` get a condition of the project's own."""

    def get_asset_spec(self, props: LakenormTableProps) -> dg.AssetSpec:
        spec = super().get_asset_spec(props)
        own = dg.AutomationCondition.eager() if props.kind == "raw" and props.stream == "events" else None
        return spec.replace_attributes(key=spec.key.with_prefix("lake"), automation_condition=own)


def test_the_sources_condition_goes_on_the_translated_keys_and_a_translators_own_condition_wins(tmp_path):
    defs = build_definitions(automated_config(tmp_path), translator=Prefixed())
    graph = defs.resolve_asset_graph()
    conditions = {k.to_user_string(): graph.get(k).automation_condition for k in graph.get_all_asset_keys()}
    assert conditions["lake/shop/_norm_raw_events"] == dg.AutomationCondition.eager()
    assert conditions["lake/shop/orders"] == conditions["lake/shop/_norm_raw_orders"] == new_load_condition()
    assert conditions["lake/shop/_norm_loads"] is None  # observed, never materialized
    assert graph.get(dg.AssetKey(["lake", "shop", "_norm_raw_orders"])).parent_keys == {UPSTREAM}
    automation = defs.resolve_sensor_def("shop_automation")
    assert dg.AssetKey(["lake", "shop", "_norm_raw_events"]) in automation.asset_selection.resolve(graph)
