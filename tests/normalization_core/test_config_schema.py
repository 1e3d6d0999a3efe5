"""One JSON Schema for `lakenorm.yaml`: shipped with the package, it validates the configuration,
editors read it from the first line of the files the demo and the stack write, and it cannot drift from the
configuration's dataclasses or the choices the code knows."""
from __future__ import annotations

import dataclasses
import json
import tomllib
from pathlib import Path

import pytest
import yaml
from jsonschema import Draft202012Validator

from normalization_core.api import config_schema, config_yaml, load_config, schema_path
from normalization_core.configuration.config import (
    INPUT_KINDS,
    SYNC_MODES,
    LakenormConfig,
    SourceConfig,
    StreamOverride,
)
from normalization_core.configuration.schema_settings import (
    CONTRACT_ENTITIES,
    CONTRACT_MODES,
    DATA_TYPES,
    DETECTIONS,
    ColumnHint,
    SchemaSettings,
)
from normalization_core.io.storage import ObjectStore
from normalization_core.naming.conventions import CONVENTIONS
from normalization_core.schema.contract import SchemaContract

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = config_schema()
DEFS = SCHEMA["$defs"]
SOURCE = DEFS["source"]["properties"]
STREAM = DEFS["stream"]["properties"]
HEADER = "# yaml-language-server: $schema="


def keys(properties: dict) -> set[str]:
    return set(properties)


# Dataclass fields that are not written as they are named: what a file's key becomes once read.
FROM_KEY = {"schemas": "schema_file", "schema": "schema_file"}
NOT_KEYS = {"path"}  # where the configuration was read from


def fields(cls: type) -> set[str]:
    return {FROM_KEY.get(f.name, f.name) for f in dataclasses.fields(cls)} - NOT_KEYS


def test_the_schema_is_a_valid_json_schema_shipped_in_the_package_and_in_the_repository():
    Draft202012Validator.check_schema(SCHEMA)
    assert schema_path() == ROOT / "normalization_core" / "configuration" / "lakenorm.schema.json"
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "configuration/lakenorm.schema.json" in package_data["normalization_core"]


@pytest.mark.parametrize("cls, properties", [
    (LakenormConfig, SCHEMA["properties"]),
    (SourceConfig, SOURCE),
    (StreamOverride, STREAM),
    (ColumnHint, DEFS["column_hint"]["properties"]),
    (SchemaSettings, SOURCE["settings"]["properties"]),
    (SchemaContract, DEFS["schema_contract"]["anyOf"][2]["properties"]),
    (ObjectStore, SCHEMA["properties"]["object_store"]["properties"]),
])
def test_every_key_of_the_configuration_is_in_the_schema_and_nothing_else(cls, properties):
    assert fields(cls) == keys(properties)


def test_the_schemas_choices_are_the_codes():
    assert SOURCE["convention"]["enum"] == list(CONVENTIONS)
    assert SOURCE["input"]["enum"] == list(INPUT_KINDS)
    assert STREAM["destination_sync_mode"]["enum"] == list(SYNC_MODES)
    assert DEFS["contract_mode"]["enum"] == list(CONTRACT_MODES)
    assert DEFS["data_type"]["enum"] == list(DATA_TYPES)
    assert DEFS["detection"]["enum"] == list(DETECTIONS)
    assert list(DEFS["schema_contract"]["anyOf"][2]["properties"]) == list(CONTRACT_ENTITIES)


def test_the_schemas_defaults_are_the_dataclasses():
    defaults = {f.name: f.default for f in dataclasses.fields(SourceConfig)}
    for key, spec in SOURCE.items():
        if "default" in spec:
            assert spec["default"] == defaults[key], key
    assert SOURCE["settings"]["properties"]["detections"]["default"] == list(SchemaSettings().detections)
    hint = ColumnHint()
    assert {k: v["default"] for k, v in DEFS["column_hint"]["properties"].items() if "default" in v} == {
        "primary_key": hint.primary_key, "nullable": hint.nullable}
    assert DEFS["contract_mode"]["default"] == SchemaContract().tables


def written_config(path: Path) -> dict:
    """A generated configuration file: its first line names the schema, the rest validates against it."""
    text = path.read_text(encoding="utf-8")
    first = text.splitlines()[0]
    assert first.startswith(HEADER)
    assert Path(first[len(HEADER):]) == schema_path() and schema_path().is_file()
    doc = yaml.safe_load(text)
    Draft202012Validator(SCHEMA).validate(doc)
    return doc


def test_the_demos_configuration_names_the_schema_and_is_valid(tmp_path):
    from lakenorm_app.demo import write_demo_files
    from lakenorm_app.samples import SampleSpec

    config_file = write_demo_files(tmp_path, SampleSpec(packages=1, orders=2, customers=1, events=1))
    assert written_config(config_file)["sources"][0]["name"] == "shop"
    assert load_config(config_file).source("shop").catalog == tmp_path / "catalog.json"


def test_the_stacks_configuration_names_the_schema_and_is_valid(tmp_path, monkeypatch):
    from deploy import stack as stack_module

    monkeypatch.setattr(stack_module, "ensure_s3_jars", lambda: ["/jars/hadoop-aws.jar"])
    (tmp_path / "dagster_home").mkdir()
    ports = {"postgres": 5, "metastore": 4, "s3": 6, "spark": 7, "engine": 9, "webserver": 8}
    (tmp_path / "stack.json").write_text(json.dumps({"ports": ports}))
    stack = stack_module.Stack(tmp_path)
    stack_module.write_files(stack)
    assert written_config(stack.config_file())["object_store"]["endpoint"] == "http://127.0.0.1:6"


def test_config_yaml_round_trips_a_document():
    doc = {"warehouse": "wh", "sources": [{"name": "shop", "landing": "landing"}]}
    assert yaml.safe_load(config_yaml(doc)) == doc


def test_the_full_example_of_the_docs_is_valid():
    """Every `lakenorm.yaml` example of the documentation (a yaml block with `warehouse:`) passes the schema."""
    examples = [block for page in sorted((ROOT / "docs").rglob("*.md"))
                for block in page.read_text(encoding="utf-8").split("```yaml\n")[1:]]
    configs = [yaml.safe_load(block.split("```")[0]) for block in examples]
    configs = [c for c in configs if isinstance(c, dict) and "warehouse" in c]
    assert configs, "the docs show at least one configuration"
    for config in configs:
        Draft202012Validator(SCHEMA).validate(config)
