"""Dagster: the `airbyte` convention's typed tables become assets that follow the nesting (SPEC §8)."""
from __future__ import annotations

import json

import dagster as dg

from normalization_core.configuration.config import parse_config
from pipeline_assets.definitions import build_definitions

INT = {"type": "integer"}
CARS = {"type": "object", "properties": {
    "specs": {"type": "object", "properties": {"gearbox": {"type": "string"},
                                               "engine": {"type": "object", "properties": {"cylinders": INT}}}},
    "limited_editions": {"type": "array", "items": {"type": "object", "properties": {"year": INT}}},
    "colors": {"type": "array", "items": {"type": "string"}}}}


def test_airbyte_child_tables_are_assets_depending_on_their_parent(tmp_path):
    (tmp_path / "landing").mkdir()
    (tmp_path / "catalog.json").write_text(json.dumps({"streams": [
        {"stream": {"name": "Cars", "json_schema": CARS}, "destination_sync_mode": "append"}]}))
    config = parse_config({"warehouse": "wh", "sources": [{"name": "garage", "landing": "landing",
                                                            "catalog": "catalog.json", "convention": "airbyte"}]},
                          base_dir=tmp_path)
    graph = build_definitions(config).resolve_asset_graph()

    def parents(key: str) -> set[str]:
        return {k.to_user_string() for k in graph.get(dg.AssetKey(key.split("/"))).parent_keys}

    assert {k.to_user_string() for k in graph.get_all_asset_keys()} == {
        "garage/_airbyte_raw_cars", "garage/cars", "garage/cars_specs", "garage/cars_specs_engine",
        "garage/cars_limited_editions", "garage/_airbyte_loads", "garage/_airbyte_versions"}
    assert parents("garage/cars") == {"garage/_airbyte_raw_cars"}
    assert parents("garage/cars_specs") == parents("garage/cars_limited_editions") == {"garage/cars"}
    assert parents("garage/cars_specs_engine") == {"garage/cars_specs"}
    columns = graph.get(dg.AssetKey(["garage", "cars_specs"])).metadata["dagster/column_schema"].columns
    assert [(c.name, c.type) for c in columns] == [("gearbox", "string"), ("engine", "string")]


def test_colliding_airbyte_streams_become_assets_with_airbytes_hashed_names(tmp_path):
    (tmp_path / "landing").mkdir()
    string = {"type": ["null", "string"]}
    (tmp_path / "catalog.json").write_text(json.dumps({"streams": [  # Airbyte's un-nesting_collisions catalog
        {"stream": {"name": "simple stream name", "namespace": "namespace",
                    "json_schema": {"type": "object", "properties": {"id": string}}}},
        {"stream": {"name": "simple", "namespace": "namespace", "json_schema": {"type": "object", "properties": {
            "id": string, "stream_name": {"type": ["null", "object"], "properties": {"id": string}}}}}}]}))
    config = parse_config({"warehouse": "wh", "sources": [{"name": "src", "landing": "landing",
                                                            "catalog": "catalog.json", "convention": "airbyte"}]},
                          base_dir=tmp_path)
    graph = build_definitions(config).resolve_asset_graph()  # not refused

    assert {k.to_user_string() for k in graph.get_all_asset_keys()} == {
        "src/_airbyte_raw_simple_stream_name", "src/_airbyte_raw_simple", "src/simple_stream_name_f35",
        "src/simple", "src/simple_b94_stream_name", "src/_airbyte_loads", "src/_airbyte_versions"}
    reported = graph.get(dg.AssetKey(["src", "simple_b94_stream_name"])).metadata["name_collisions"]
    assert reported == [{"simple stream name": "simple_stream_name_f35", "simple/stream_name": "simple_b94_stream_name"}]


def test_column_collisions_are_asset_metadata_a_key_named_as_a_system_column_among_them(tmp_path):
    (tmp_path / "landing").mkdir()
    string = {"type": ["null", "string"]}
    (tmp_path / "catalog.json").write_text(json.dumps({"streams": [{"stream": {"name": "s", "json_schema": {
        "type": "object", "properties": {"id": string, "ID": string, "_airbyte_ab_id": string}}}}]}))
    config = parse_config({"warehouse": "wh", "sources": [{"name": "src", "landing": "landing",
                                                            "catalog": "catalog.json", "convention": "airbyte"}]},
                          base_dir=tmp_path)
    metadata = build_definitions(config).resolve_asset_graph().get(dg.AssetKey(["src", "s"])).metadata
    assert metadata["column_collisions"] == [
        {"system:_airbyte_ab_id": "_airbyte_ab_id", "_airbyte_ab_id": "_airbyte_ab_id_1"},
        {"id": "id", "ID": "id_1"}]
    assert "name_collisions" not in metadata
