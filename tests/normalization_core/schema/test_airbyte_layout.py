"""Catalog JSON Schema -> tables under the `airbyte` convention (SPEC §4.3), without Spark."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from normalization_core.schema import schema_from_json_schema

CASES = sorted((Path(__file__).resolve().parents[2] / "cases" / "airbyte_layout").glob("*.json"))
INT, STR = {"type": "integer"}, {"type": ["null", "string"]}


def obj(**properties: Any) -> dict[str, Any]:
    return {"type": ["null", "object"], "properties": properties}


def layout(schema: dict[str, Any]) -> dict[str, Any]:
    """The parts of a schema document a case states: tables, columns (raw key when it differs), table collisions."""
    tables = [{"name": t["name"], "parent": t["parent"], "json_path": t["json_path"], "element": t["element"],
               "columns": [[c["name"], c["data_type"], *([c["path"][0]] if c["path"] != [c["name"]] else [])]
                           for c in t["columns"]]} for t in schema["tables"]]
    collisions = [{k: v for k, v in c.items() if k != "table"} for c in schema["collisions"] if c["table"] is None]
    return {"tables": tables, "table_collisions": collisions}


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_golden_layout(path: Path, load_case) -> None:
    case = load_case(f"airbyte_layout/{path.name}")
    schema = schema_from_json_schema(case["stream"], case["json_schema"], "airbyte", namespace=case["namespace"],
                                     max_table_nesting=case.get("max_table_nesting", 1000))
    assert layout(schema) == case["expected"]
    assert schema["convention"] == "airbyte" and schema["max_identifier_length"] == 63


def test_column_clashes_are_reported_per_table(load_case) -> None:
    case = load_case("airbyte_layout/shop_orders.json")
    schema = schema_from_json_schema(case["stream"], case["json_schema"], "airbyte", namespace="shop")
    system, clash = [c for c in schema["collisions"] if c["table"] == "orders"]
    assert clash["name"] == "user_id"
    assert clash["resolved"] == {"User Id": "user_id", "user_id": "user_id_1", "User id": "user_id_2",
                                 "user id": "user_id_3", "User@Id": "user_id_4"}
    assert system["resolved"] == {"system:_airbyte_ab_id": "_airbyte_ab_id", "_airbyte_ab_id": "_airbyte_ab_id_1"}


def test_data_keys_never_take_a_system_column_name() -> None:
    schema = schema_from_json_schema("s", obj(**{"_Airbyte_S_hashid": STR, "child": obj(**{
        " _airbyte_s_foreign_hashid": INT})}), "airbyte")
    root, child = schema["tables"]
    assert [c["name"] for c in root["columns"]] == ["_airbyte_s_hashid_1", "child"]
    assert [c["name"] for c in child["columns"]] == ["_airbyte_s_foreign_hashid_1"]


def test_names_of_an_earlier_version_never_change() -> None:
    first = schema_from_json_schema("s", obj(a_b=obj(x=INT), q=STR), "airbyte")
    assert [t["name"] for t in first["tables"]] == ["s", "s_a_b"]
    # a new object `a.b` would collide with `s_a_b`: the existing table keeps its name, only the newcomer hashes
    second = schema_from_json_schema("s", obj(a_b=obj(x=INT), q=STR, Q=STR, a=obj(b=obj(y=INT))), "airbyte",
                                     previous=first)
    names = {tuple(t["json_path"]): t["name"] for t in second["tables"]}
    assert names[("a_b",)] == "s_a_b"
    assert names[("a", "b")].startswith("s_a_") and names[("a", "b")].endswith("_b") and names[("a", "b")] != "s_a_b"
    assert [c["name"] for c in second["tables"][0]["columns"]] == ["a_b", "q", "q_1", "a"]


def test_the_same_path_always_gets_the_same_hash_for_one_namespace() -> None:
    schema = obj(x_y=obj(v=INT), x=obj(y=obj(w=INT)))

    def names(namespace: str) -> list[str]:
        return [t["name"] for t in schema_from_json_schema("s", schema, "airbyte", namespace=namespace)["tables"]]

    assert names("shop") == names("shop")
    assert names("shop")[1] != names("other")[1]
