"""Catalog JSON Schema -> tables and columns (SPEC §4.2, §5.1), without Spark."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from lakenorm_app.samples import sample_catalog
from normalization_core.errors import ConfigError
from normalization_core.naming.base import compute_tag
from normalization_core.schema import (
    child_tables,
    find_table,
    lineage,
    schema_document,
    schema_from_json_schema,
    schema_hash,
)

CASES = Path(__file__).resolve().parents[2] / "cases" / "typing"
TYPE_CASES = json.loads((CASES / "json_schema_types.json").read_text(encoding="utf-8"))["cases"]


def obj(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


def arr(items: dict[str, Any]) -> dict[str, Any]:
    return {"type": ["null", "array"], "items": items}


INT, STR = {"type": "integer"}, {"type": ["null", "string"]}


def tables_of(json_schema: dict[str, Any], stream: str = "s", **kwargs: Any) -> dict[str, dict[str, Any]]:
    schema = schema_from_json_schema(stream, json_schema, **kwargs)
    return {t["name"]: t for t in schema["tables"]}


def columns_of(table: dict[str, Any]) -> dict[str, tuple[list[str], str]]:
    return {c["name"]: (c["path"], c["data_type"]) for c in table["columns"]}


@pytest.mark.parametrize("case", TYPE_CASES, ids=[c["row"] for c in TYPE_CASES])
def test_type_mapping(case: dict[str, Any]) -> None:
    (column,) = tables_of(obj(c=case["schema"]))["s"]["columns"]
    assert (column["name"], column["path"]) == ("c", ["c"])
    assert (column["data_type"], column["logical_type"]) == (case["data_type"], case["logical_type"])
    assert column["json_text"] == (case["logical_type"] == "json")


def test_union_variants_follow_the_s3_guide_names() -> None:
    schema = {"oneOf": [{"type": "boolean"},
                        {"type": "object", "properties": {"id": INT, "name": {"type": "string"}}}]}
    (column,) = tables_of(obj(u=schema))["s"]["columns"]
    assert column["variants"] == [
        {"name": "boolean", "logical_type": "boolean", "data_type": "boolean"},
        {"name": "object", "logical_type": "object", "data_type": "struct<id:bigint,name:string>", "fields": [
            {"name": "id", "key": "id", "logical_type": "bigint", "data_type": "bigint"},
            {"name": "name", "key": "name", "logical_type": "string", "data_type": "string"}]}]


def test_time_and_timestamp_union_tags() -> None:
    schema = {"oneOf": [{"type": "string", "format": "time", "airbyte_type": "time_with_timezone"},
                        {"type": "string", "format": "date-time", "airbyte_type": "timestamp_without_timezone"}]}
    (column,) = tables_of(obj(u=schema))["s"]["columns"]
    assert column["data_type"] == (
        "struct<type:string,time_with_timezone:bigint,timestamp_without_timezone:timestamp_ntz>")


@pytest.mark.parametrize(("first", "second", "expected"), [
    (obj(id=INT), obj(name=STR), {"id": (["id"], "bigint"), "name": (["name"], "string")}),
    (obj(id=INT, name=STR), obj(id=INT, birthday={"type": "string", "format": "date"}),
     {"id": (["id"], "bigint"), "name": (["name"], "string"), "birthday": (["birthday"], "date")}),
    (obj(a=obj(x=INT)), obj(a=obj(y=STR)), {"a__x": (["a", "x"], "bigint"), "a__y": (["a", "y"], "string")}),
])
def test_object_options_merge_into_one_object(first: dict, second: dict, expected: dict) -> None:
    assert columns_of(tables_of(obj(o={"oneOf": [first, second]}))["s"]) == {
        f"o__{name}": (["o", *path], data_type) for name, (path, data_type) in expected.items()}


@pytest.mark.parametrize(("schema", "key"), [
    ({"oneOf": [obj(id=INT), obj(id={"type": "string"})]}, "o.id"),
    ({"anyOf": [arr(INT), arr({"type": "string"})]}, "o"),
    ({"oneOf": [obj(a=obj(x=INT)), obj(a=obj(x={"type": "boolean"}))]}, "o.a.x"),
])
def test_conflicting_options_are_a_configuration_error(schema: dict, key: str) -> None:
    with pytest.raises(ConfigError) as raised:
        schema_from_json_schema("orders", obj(o=schema))
    assert raised.value.where == "stream 'orders'"
    assert f"key {key!r}" in str(raised.value)


def test_nested_objects_flatten_with_normalized_names() -> None:
    schema = obj(**{"customer": obj(**{"Home Address": obj(city=STR, **{"ZIP-code": STR})}),
                    "CamelCaseKey": STR, "a.b.c": INT, "": STR})
    assert columns_of(tables_of(schema)["s"]) == {
        "customer__home_address__city": (["customer", "Home Address", "city"], "string"),
        "customer__home_address__zip_code": (["customer", "Home Address", "ZIP-code"], "string"),
        "camel_case_key": (["CamelCaseKey"], "string"),
        "a_b_c": (["a.b.c"], "bigint"),
        "_empty": ([""], "string"),
    }


def test_properties_order_is_kept() -> None:
    names = [c["name"] for c in tables_of(obj(z=INT, a=INT, m=obj(b=INT, a=INT)))["s"]["columns"]]
    assert names == ["z", "a", "m__b", "m__a"]


def test_sample_orders_layout() -> None:
    orders = sample_catalog()["streams"][0]["stream"]["json_schema"]
    schema = schema_from_json_schema("orders", orders)
    layout = [(t["name"], t["parent"], t["path"], t["element"], [c["name"] for c in t["columns"]])
              for t in schema["tables"]]
    assert layout == [
        ("orders", None, [], "record", [
            "id", "created_at", "updated_at", "shipped_at", "status", "total", "currency", "customer__id",
            "customer__email", "customer__name", "customer__vip", "customer__address__city",
            "customer__address__zip", "customer__address__country", "notes", "attributes"]),
        ("orders__line_items", "orders", ["line_items"], "object", ["sku", "qty", "price"]),
        ("orders__tags", "orders", ["tags"], "scalar", ["value"]),
        ("orders__line_items__discounts", "orders__line_items", ["discounts"], "object", ["code", "amount"]),
    ]
    assert find_table(schema, "orders")["columns"][-1]["json_text"] is True  # attributes: no properties
    assert schema["collisions"] == []


def test_arrays_become_child_value_and_list_tables() -> None:
    schema = obj(profile=obj(emails=arr({"type": "string", "format": "date"})),
                 matrix=arr(arr(arr(INT))), items=arr(obj(qty=INT, sub=arr(obj(x=STR)))))
    tables = {t["name"]: (t["parent"], t["path"], t["json_path"], t["element"], t["depth"], columns_of(t))
              for t in schema_from_json_schema("Doc", schema, "dlt")["tables"]}
    assert tables == {
        "doc": (None, [], [], "record", 0, {}),
        "doc__profile__emails": ("doc", ["profile", "emails"], ["profile", "emails"], "scalar", 2,
                                 {"value": ([], "date")}),
        "doc__matrix": ("doc", ["matrix"], ["matrix"], "array", 1, {}),
        "doc__items": ("doc", ["items"], ["items"], "object", 1, {"qty": (["qty"], "bigint")}),
        "doc__matrix__list": ("doc__matrix", [], ["matrix"], "array", 3, {}),
        "doc__items__sub": ("doc__items", ["sub"], ["items", "sub"], "object", 2, {"x": (["x"], "string")}),
        "doc__matrix__list__list": ("doc__matrix__list", [], ["matrix"], "scalar", 5, {"value": ([], "bigint")}),
    }


def test_tables_list_parents_before_children() -> None:
    schema = schema_from_json_schema("s", obj(a=arr(obj(b=arr(obj(c=arr(INT)))))))
    seen: set[str] = set()
    for table in schema["tables"]:
        assert table["parent"] is None or table["parent"] in seen
        seen.add(table["name"])
    assert [t["name"] for t in lineage(schema, "s__a__b__c")] == ["s", "s__a", "s__a__b", "s__a__b__c"]
    assert [t["name"] for t in child_tables(schema, "s__a")] == ["s__a__b"]


# dlt's test_json_types_for_recursion_level: {"f":[{"l":["a"],"v":120,"lo":[{"e":{"v":1}}]}]}
NESTING_SCHEMA = obj(f=arr(obj(l=arr(STR), v=INT, lo=arr(obj(e=obj(v=INT))))))


@pytest.mark.parametrize(("max_nesting", "expected"), [
    (0, {"default": {"f": "json"}}),
    (1, {"default": {}, "default__f": {"v": "bigint", "l": "json", "lo": "json"}}),
    (2, {"default": {}, "default__f": {"v": "bigint"}, "default__f__l": {"value": "string"},
         "default__f__lo": {"e": "json"}}),
    (3, {"default": {}, "default__f": {"v": "bigint"}, "default__f__l": {"value": "string"},
         "default__f__lo": {"e__v": "bigint"}}),
])
def test_max_table_nesting_keeps_deeper_values_as_json(max_nesting: int, expected: dict) -> None:
    tables = tables_of(NESTING_SCHEMA, "default", max_table_nesting=max_nesting)
    assert {name: {c["name"]: c["logical_type"] for c in t["columns"]} for name, t in tables.items()} == expected


def test_array_of_arrays_past_the_limit_keeps_a_list_column() -> None:
    tables = tables_of(obj(w=arr(arr(INT))), "zen", max_table_nesting=2)
    assert {n: columns_of(t) for n, t in tables.items()} == {"zen": {}, "zen__w": {"list": ([], "string")}}


def test_case_only_key_collision_is_reported_and_the_key_written_as_the_name_keeps_it() -> None:
    schema = schema_from_json_schema("s", obj(Id=INT, id=STR))
    assert columns_of(schema["tables"][0]) == {"id": (["id"], "string"),
                                               f"id_{compute_tag(json.dumps(['Id']))}": (["Id"], "bigint")}
    (collision,) = schema["collisions"]
    assert collision == {"table": "s", "name": "id", "originals": ['["id"]', '["Id"]'],
                         "resolved": {'["id"]': "id", '["Id"]': f"id_{compute_tag(json.dumps(['Id']))}"}}


def test_key_with_separator_collides_with_flattened_path() -> None:
    schema = schema_from_json_schema("s", obj(a=obj(b=INT), a__b=STR))
    names = sorted(c["name"] for c in schema["tables"][0]["columns"])
    assert names[0] == "a__b" and names[1].startswith("a__b_") and len(schema["collisions"]) == 1


@pytest.mark.parametrize(("convention", "key"), [("native", "_norm_id"), ("dlt", "_dlt_load_id"), ("dlt", "_dlt_meta")])
def test_keys_never_take_system_column_names(convention: str, key: str) -> None:
    schema = schema_from_json_schema("s", obj(**{key: INT}), convention)
    (column,) = schema["tables"][0]["columns"]
    assert column["name"] == f"{key}_{compute_tag(json.dumps([key]))}"
    assert schema["collisions"][0]["originals"] == [f"system:{key}", json.dumps([key])]


def test_child_table_name_collision_is_reported() -> None:
    schema = schema_from_json_schema("s", obj(**{"line items": arr(INT), "line_items": arr(STR)}))
    names = [t["name"] for t in schema["tables"]]
    assert names[:2] == ["s", "s__line_items"] and names[2].startswith("s__line_items_")
    assert [(c["table"], c["name"]) for c in schema["collisions"]] == [(None, "s__line_items")]


def test_previous_names_never_change() -> None:
    first = schema_from_json_schema("s", obj(id=STR, items=arr(obj(Qty=INT))))
    second = schema_from_json_schema("s", obj(Id=INT, id=STR, items=arr(obj(qty=STR, Qty=INT))), previous=first)
    assert columns_of(second["tables"][0])["id"] == (["id"], "string")  # "Id" sorts first but "id" was there
    assert columns_of(second["tables"][1])["qty"] == (["Qty"], "bigint")
    assert {c["table"] for c in second["collisions"]} == {"s", "s__items"}


def test_long_names_are_shortened_with_a_tag() -> None:
    key = "a_very_long_property_name_that_goes_on"
    schema = schema_from_json_schema("stream", obj(**{key: obj(**{key: INT})}), max_identifier_length=20)
    (column,) = schema["tables"][0]["columns"]
    assert len(column["name"]) == 20 and column["path"] == [key, key]
    assert schema["max_identifier_length"] == 20


def test_a_convention_without_a_layout_is_refused() -> None:
    with pytest.raises(ValueError, match="typing from a catalog supports"):
        schema_from_json_schema("s", obj(a=INT), "normalization_core.naming.snake_case:SnakeCaseNaming")


def test_hash_is_stable_and_content_based() -> None:
    orders = sample_catalog()["streams"][0]["stream"]["json_schema"]
    first, again = schema_from_json_schema("orders", orders), schema_from_json_schema("orders", orders)
    assert schema_hash(first) == schema_hash(again)
    assert len(schema_hash(first)) == 64
    orders["properties"]["coupon"] = STR
    assert schema_hash(schema_from_json_schema("orders", orders)) != schema_hash(first)
    assert schema_hash(schema_from_json_schema("orders", orders, max_table_nesting=1)) != schema_hash(first)


def test_document_dumps_to_yaml_and_back() -> None:
    schema = schema_from_json_schema("orders", sample_catalog()["streams"][0]["stream"]["json_schema"])
    document = schema_document(schema)
    assert yaml.safe_load(yaml.safe_dump(document, sort_keys=False)) == document
    assert json.loads(json.dumps(document)) == document
    document["tables"].clear()
    assert schema["tables"], "the export is a copy"
