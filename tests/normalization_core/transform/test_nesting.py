"""Typed root and child tables from raw rows (SPEC §3, §4.2, §5.1): exact rows, keys and changes."""
from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from normalization_core.columns import SystemNames

from normalization_core.naming.conventions import system_names
from normalization_core.schema import StreamSchema, find_table, lineage, schema_from_json_schema
from normalization_core.transform.nesting import child_table, typed_root, typed_tables
from normalization_core.transform.parse import parse_records
from normalization_core.transform.raw import raw_schema
from lakenorm_app.samples import sample_catalog

NATIVE = system_names("native")


def raw_frame(spark, names: SystemNames, records: list[Any]) -> DataFrame:
    """Raw rows `r0`, `r1`, ...; a value that is not an object is a rejected line."""
    extracted = datetime(2024, 6, 1, tzinfo=timezone.utc)
    rows = [(f"r{i}", "load-1", extracted, json.dumps(record), "part.jsonl", i + 1,
             None if isinstance(record, dict) else "JSON value is not an object")
            for i, record in enumerate(records)]
    return spark.createDataFrame(rows, raw_schema(names))


def expected_key(schema: StreamSchema, table: str, at: list[Any]) -> str:
    """The row key the SPEC's hashing gives: root sha2(raw id), child sha2(parent key, table[, index]).

    A nested object (airbyte) has no index: `at` holds None there.
    """
    key = hashlib.sha256(at[0].encode()).hexdigest()[:32]
    for step, index in zip(lineage(schema, table)[1:], at[1:]):
        parts = [key, step["name"], *([] if index is None else [str(index)])]
        key = hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32]
    return key


def in_array(schema: StreamSchema, table: str) -> bool:
    return find_table(schema, table)["element"] != "nested_object"


def actual_rows(df: DataFrame, names: SystemNames, schema: StreamSchema, table: str) -> list[dict[str, Any]]:
    """One Spark action: data columns as strings (unions as JSON), keys, list index and changed fields."""
    t = find_table(schema, table)
    types = dict(df.dtypes)
    data = [(F.to_json(c["name"]) if types[c["name"]].startswith("struct") else F.col(c["name"]).cast("string"))
            .alias(c["name"]) for c in t["columns"]]
    links = [names.root_id, names.parent_key(t)] if t["parent"] else [names.raw_id]
    links += [names.list_idx] if t["parent"] and in_array(schema, table) else []
    rows = df.select(*data, names.row_id(t), *links, F.col(names.meta).changes.field.alias("changes")).collect()
    return [row.asDict() for row in rows]


def expected_rows(names: SystemNames, schema: StreamSchema, table: str, cases: list[dict]) -> list[dict[str, Any]]:
    doc = find_table(schema, table)
    parent = doc["parent"]
    rows = []
    for case in cases:
        row = {**case["values"], "changes": case["changes"],
               names.row_id(doc): expected_key(schema, table, case["at"])}
        if parent:
            row.update({names.root_id: expected_key(schema, table, case["at"][:1]),
                        names.parent_key(doc): expected_key(schema, parent, case["at"][:-1])})
            row.update({names.list_idx: case["at"][-1]} if in_array(schema, table) else {})
        else:
            row[names.raw_id] = case["at"][0]
        rows.append(row)
    return rows


def assert_tables(spark, names: SystemNames, schema: StreamSchema, records: list[Any], expected: dict) -> None:
    parsed = parse_records(raw_frame(spark, names, records), names, schema).persist()
    tables = typed_tables(parsed, names, schema)
    assert list(tables) == [t["name"] for t in schema["tables"]]
    assert set(tables) == set(expected)
    for name, df in tables.items():
        key = names.row_id(find_table(schema, name))
        got = sorted(actual_rows(df, names, schema, name), key=lambda r: r[key])
        want = sorted(expected_rows(names, schema, name, expected[name]), key=lambda r: r[key])
        assert got == want, name
    parsed.unpersist()


def test_sample_orders_stream(spark, load_case) -> None:
    case = load_case("nesting/orders_sample.json")
    schema = schema_from_json_schema("orders", sample_catalog()["streams"][0]["stream"]["json_schema"])
    assert_tables(spark, NATIVE, schema, case["records"], case["tables"])


def test_table_columns_and_types(spark) -> None:
    schema = schema_from_json_schema("orders", sample_catalog()["streams"][0]["stream"]["json_schema"])
    parsed = parse_records(raw_frame(spark, NATIVE, []), NATIVE, schema)
    root = typed_root(parsed, NATIVE, schema)
    discounts = child_table(parsed, NATIVE, schema, "orders__line_items__discounts")
    meta = "struct<changes:array<struct<field:string,change:string,reason:string>>>"
    assert root.dtypes[-6:] == [("_norm_raw_id", "string"), ("_norm_extracted_at", "timestamp"),
                                ("_norm_load_id", "string"), ("_norm_id", "string"), ("_norm_meta", meta),
                                ("_norm_normalized_at", "timestamp")]
    assert discounts.dtypes == [("code", "string"), ("amount", "double"), ("_norm_load_id", "string"),
                                ("_norm_id", "string"), ("_norm_parent_id", "string"), ("_norm_list_idx", "bigint"),
                                ("_norm_root_id", "string"), ("_norm_meta", meta)]


def test_lists_of_lists_and_union_values_with_dlt_names(spark, load_case) -> None:
    case = load_case("nesting/lists.json")
    names = system_names("dlt")
    schema = schema_from_json_schema(case["stream"], case["json_schema"], "dlt")
    assert_tables(spark, names, schema, case["records"], case["tables"])


def test_values_deeper_than_max_table_nesting_stay_json(spark) -> None:
    # dlt's test_json_types_for_recursion_level with max_nesting 1
    f = {"type": "array", "items": {"type": "object", "properties": {
        "l": {"type": "array", "items": {"type": "string"}}, "v": {"type": "integer"},
        "lo": {"type": "array", "items": {"type": "object", "properties": {
            "e": {"type": "object", "properties": {"v": {"type": "integer"}}}}}}}}}
    schema = schema_from_json_schema("default", {"type": "object", "properties": {"f": f}}, max_table_nesting=1)
    record = {"f": [{"l": ["a"], "v": 120, "lo": [{"e": {"v": 1}}]}]}
    parsed = parse_records(raw_frame(spark, NATIVE, [record]), NATIVE, schema)
    rows = child_table(parsed, NATIVE, schema, "default__f").select("l", "v", "lo", "_norm_list_idx").collect()
    assert [r.asDict() for r in rows] == [{"l": '["a"]', "v": 120, "lo": '[{"e":{"v":1}}]', "_norm_list_idx": 0}]


def test_normalizing_twice_gives_the_same_keys(spark, load_case) -> None:
    records = load_case("nesting/orders_sample.json")["records"]
    schema = schema_from_json_schema("orders", sample_catalog()["streams"][0]["stream"]["json_schema"])

    def keys() -> list[tuple[str, ...]]:
        parsed = parse_records(raw_frame(spark, NATIVE, records), NATIVE, schema)
        df = child_table(parsed, NATIVE, schema, "orders__line_items__discounts")
        return sorted(tuple(r) for r in df.select("_norm_id", "_norm_parent_id", "_norm_root_id").collect())

    first = keys()
    assert len(first) == 2 and first == keys()


def test_airbyte_layout_rows_keys_and_json_columns(spark, load_case) -> None:
    case = load_case("nesting/airbyte_orders.json")
    names = system_names("airbyte")
    schema = schema_from_json_schema(case["stream"], case["json_schema"], "airbyte")
    assert_tables(spark, names, schema, case["records"], case["tables"])


def test_airbyte_child_columns_and_types(spark) -> None:
    schema = schema_from_json_schema("cars", {"type": "object", "properties": {
        "specs": {"type": "object", "properties": {"hp": {"type": "integer"}}},
        "editions": {"type": "array", "items": {"type": "object", "properties": {"year": {"type": "integer"}}}}}},
        "airbyte")
    names = system_names("airbyte")
    parsed = parse_records(raw_frame(spark, names, []), names, schema)
    meta = "struct<changes:array<struct<field:string,change:string,reason:string>>>"
    assert typed_root(parsed, names, schema).dtypes[:2] == [("specs", "string"), ("editions", "string")]
    record = [("_airbyte_ab_id", "string"), ("_airbyte_emitted_at", "timestamp"), ("_airbyte_load_id", "string")]
    tail = [("_airbyte_root_hashid", "string"), ("_airbyte_meta", meta), ("_airbyte_normalized_at", "timestamp")]
    assert child_table(parsed, names, schema, "cars_specs").dtypes == [
        ("hp", "bigint"), *record, ("_airbyte_specs_hashid", "string"), ("_airbyte_cars_foreign_hashid", "string"),
        *tail]
    assert child_table(parsed, names, schema, "cars_editions").dtypes == [
        ("year", "bigint"), *record, ("_airbyte_editions_hashid", "string"),
        ("_airbyte_cars_foreign_hashid", "string"), ("_airbyte_list_idx", "bigint"), *tail]


def test_a_records_own_dlt_id_keys_its_root_row_and_its_children_link_to_it(spark) -> None:
    names = system_names("dlt")
    schema = schema_from_json_schema("s", {"type": "object", "properties": {
        "id": {"type": "integer"}, "_dlt_id": {"type": "integer"},
        "kids": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "integer"}}}}}}, "dlt")
    records = [{"id": 1, "_dlt_id": "own", "kids": [{"a": 1}]}, {"id": 2, "_dlt_id": 7, "kids": [{"a": 2}]},
               {"id": 3, "_dlt_id": "", "kids": [{"a": 3}]}]
    parsed = parse_records(raw_frame(spark, names, records), names, schema)
    roots = {r["id"]: r["_dlt_id"] for r in typed_root(parsed, names, schema).collect()}  # three test rows
    assert roots[1] == "own" and roots[2] == "7" and roots[3] == expected_key(schema, "s", ["r2"])
    kids = {r["a"]: (r["_dlt_parent_id"], r["_dlt_root_id"])
            for r in child_table(parsed, names, schema, "s__kids").collect()}
    assert kids == {a: (roots[a], roots[a]) for a in (1, 2, 3)}
