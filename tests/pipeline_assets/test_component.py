"""lakenorm as a Dagster Component (SPEC §8): a `defs.yaml` in a project's `defs/` folder, loaded with
`dg.load_from_defs_folder` (no `dg` command); the demo's code location is such a project. Neither it nor a location
with a translator starts a JVM, and `dagster definitions validate` passes for it and for the plain-Python one."""
from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest
import yaml
from dagster.components.resolved.context import ResolutionContext
from dagster.components.resolved.core_models import AssetAttributesModel
from dagster.components.utils.translation import TranslatorResolvingInfo

from lakenorm_app.samples import write_catalog
from normalization_core.api import SourceTables, config_yaml, load_config, stream_plans
from pipeline_assets.component import LakenormComponent
from pipeline_assets.translator import LakenormTableProps, LakenormTranslator
from tests.code_location import locations_loaded_without_a_jvm

ROOT = Path(__file__).parents[2]
TRANSLATED = """import dagster as dg

from normalization_core.api import load_config
from pipeline_assets.definitions import build_definitions
from pipeline_assets.translator import LakenormTranslator


class Prefixed(LakenormTranslator):
    def get_asset_spec(self, props):
        spec = super().get_asset_spec(props)
        return spec.replace_attributes(key=spec.key.with_prefix("lake"))


@dg.definitions
def defs():
    return build_definitions(load_config(), Prefixed())
"""
FROM_DEFS_FOLDER = """from pathlib import Path

import dagster as dg


@dg.definitions
def defs():
    return dg.load_from_defs_folder(path_within_project=Path(__file__).parent)
"""


def write_shop(folder: Path) -> Path:
    """A configuration of the sample catalog's shop (orders, customers: append_dedup; events: append)."""
    (folder / "landing").mkdir(parents=True)
    write_catalog(folder / "catalog.json")
    (folder / "lakenorm.yaml").write_text(config_yaml({"warehouse": "wh", "sources": [
        {"name": "shop", "landing": "landing", "catalog": "catalog.json"}]}))
    return folder / "lakenorm.yaml"


def write_project(root: Path, package: str, attributes: dict) -> Path:
    """A Dagster project as `create-dagster` lays it out: `dg.toml`, the package's `definitions.py` and the
    component's `defs/lakenorm/defs.yaml`."""
    (root / package / "defs" / "lakenorm").mkdir(parents=True)
    (root / "dg.toml").write_text(f'directory_type = "project"\n\n[project]\nroot_module = "{package}"\n')
    (root / package / "__init__.py").write_text("")
    (root / package / "definitions.py").write_text(FROM_DEFS_FOLDER)
    (root / package / "defs" / "lakenorm" / "defs.yaml").write_text(yaml.safe_dump(
        {"type": "pipeline_assets.component.LakenormComponent", "attributes": attributes}, sort_keys=False))
    return root


def test_a_defs_yaml_puts_the_tables_under_the_projects_keys_groups_owners_tags_and_automation(tmp_path, monkeypatch):
    write_shop(tmp_path / "lake")  # beside the project: config_file is relative to the defs.yaml's folder
    package = f"project_{tmp_path.name}"
    project = write_project(tmp_path / "project", package, {
        "config_file": "../../../../lake/lakenorm.yaml", "key_prefix": "lake", "group_name": "shop_tables",
        "owners": ["team:data"], "tags": {"domain": "shop"},
        "automation_condition": "{{ dg.AutomationCondition.eager() }}",
        "translation": {"metadata": {"table_kind": "{{ props.kind }}"}, "tags": {"stream": "{{ props.stream }}"}}})
    monkeypatch.syspath_prepend(str(project))
    defs = importlib.import_module(f"{package}.definitions").defs()
    graph = defs.resolve_asset_graph()

    def node(key: str):
        return graph.get(dg.AssetKey.from_user_string(key))

    orders, loads = node("lake/shop/orders"), node("lake/shop/_norm_loads")
    assert all(k.path[:2] == ["lake", "shop"] for k in graph.get_all_asset_keys())
    assert (orders.group_name, orders.owners, orders.tags["domain"], orders.tags["stream"]) == (
        "shop_tables", ["team:data"], "shop", "orders")
    assert orders.automation_condition == dg.AutomationCondition.eager() and loads.automation_condition is None
    assert [node(k).metadata["table_kind"] for k in ("lake/shop/orders", "lake/shop/orders_scd",
                                                     "lake/shop/orders__line_items", "lake/shop/_norm_raw_events",
                                                     "lake/shop/events", "lake/shop/_norm_loads")] == [
        "current", "history", "child", "raw", "root", "system"]
    assert node("lake/shop/orders__line_items").parent_keys == {dg.AssetKey(["lake", "shop", "orders_scd"])}
    assert orders.partitions_def.name == "shop_load_ids"
    assert dg.AssetCheckKey(orders.key, "primary_key_unique") in graph.asset_check_keys
    assert {j.name for j in defs.resolve_all_job_defs()} >= {"shop_normalize", "shop_rebuild", "shop_maintenance",
                                                             "shop_observe_system_tables"}
    assert defs.resolve_sensor_def("shop_landing_sensor").job_name == "shop_normalize"


def test_a_translation_block_is_applied_as_dagsters_components_apply_theirs(tmp_path):
    """Resolved once per distinct rendering of its templates (Dagster resolves it for each table), the same specs."""
    block = {"key_prefix": "lake", "group_name": "{{ props.source }}_{{ props.kind }}", "owners": ["team:data"],
             "tags": {"stream": "{{ props.stream }}"}, "metadata": {"table": "{{ props.table }}"},
             "kinds": ["lakenorm"], "description": "{{ spec.description[:9] }}", "code_version": "3"}
    translation = LakenormComponent.resolve_from_dict({"translation": block}).translation
    dagster = TranslatorResolvingInfo(asset_attributes=AssetAttributesModel(**block), model_key="translation",
                                      resolution_context=ResolutionContext.default())
    config = load_config(write_shop(tmp_path))
    source = config.source("shop")
    tables, plans = SourceTables(config, source), stream_plans(source)
    tried = [("orders", "_norm_raw_orders", "raw", None), ("orders", "orders", "current", "orders_scd"),
             ("events", "events", "root", "_norm_raw_events"), ("orders", "_norm_raw_orders", "raw", None),
             (None, "_norm_loads", "system", None)]
    for stream, table, kind, parent in tried:
        props = LakenormTableProps("shop", stream, table, kind, tables.path(table), source, plans.get(stream), parent)
        spec = LakenormTranslator().get_asset_spec(props)
        assert translation(spec, props) == dagster.get_asset_spec(spec, {"props": props, "spec": spec})
    assert translation(spec, props).key == dg.AssetKey(["lake", "shop", "_norm_loads"])


@pytest.mark.slow
def test_the_demo_project_and_the_plain_location_validate_and_load_without_a_jvm(tmp_path):
    """Also a location with a translator: none of them starts a JVM."""
    config = write_shop(tmp_path)
    (tmp_path / "translated_location.py").write_text(TRANSLATED)
    keys = locations_loaded_without_a_jvm(config, ["lakenorm_app.dagster_project.definitions", "translated_location"],
                                          path=tmp_path)
    demo = keys["lakenorm_app.dagster_project.definitions"]
    assert {"shop/orders", "shop/orders__line_items", "shop/_norm_raw_events", "shop/_norm_loads"} <= demo
    assert keys["translated_location"] == {f"lake/{key}" for key in demo}
    workspace = yaml.safe_load((ROOT / "workspace.yaml").read_text())  # `make ui`'s: the demo's project
    workspace["load_from"].append({"python_module": {"module_name": "pipeline_assets.definitions",
                                                     "location_name": "plain"}})
    (tmp_path / "workspace.yaml").write_text(yaml.safe_dump(workspace))
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "dagster.yaml").write_text("telemetry: {enabled: false}\n")
    env = {**os.environ, "LAKENORM_CONFIG": str(config), "DAGSTER_HOME": str(tmp_path / "home")}
    done = subprocess.run([sys.executable, "-m", "dagster", "definitions", "validate", "-w", "workspace.yaml"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    said = done.stdout + done.stderr
    assert done.returncode == 0, said[-3000:]
    assert "Validation successful for code location lakenorm" in said
    assert "Validation successful for code location plain" in said
