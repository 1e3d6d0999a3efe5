"""Typing values from a catalog (SPEC §5.1, §10): casts, NULLED changes, unions. One Spark action per test."""
from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from normalization_core.columns import SystemNames

from normalization_core.naming.conventions import system_names
from normalization_core.schema import schema_from_json_schema
from normalization_core.transform.nesting import typed_root, typed_tables
from normalization_core.transform.parse import parse_records
from normalization_core.transform.raw import raw_schema

NAMES = system_names("native")
META_TYPE = "struct<changes:array<struct<field:string,change:string,reason:string>>>"
CHANGE = {"change": "NULLED", "reason": "DESTINATION_TYPECAST_ERROR"}


def raw_frame(spark, names: SystemNames, records: list[Any]) -> DataFrame:
    """Raw rows `r0`, `r1`, ... of JSON values (a str is taken as the line's text)."""
    extracted = datetime(2024, 6, 1, tzinfo=timezone.utc)
    rows = []
    for i, record in enumerate(records):
        text = record if isinstance(record, str) else json.dumps(record)
        error = None if text.startswith("{") else "JSON value is not an object"
        rows.append((f"r{i}", "load-1", extracted, text, "part.jsonl", i + 1, error, None))
    return spark.createDataFrame(rows, raw_schema(names))


def typed(spark, json_schema: dict[str, Any], records: list[Any]) -> DataFrame:
    schema = schema_from_json_schema("s", json_schema)
    return typed_root(parse_records(raw_frame(spark, NAMES, records), NAMES, schema), NAMES, schema)


def test_scalar_values_are_cast_or_nulled(spark, load_case) -> None:
    cases = load_case("typing/scalar_values.json")["cases"]
    columns = [f"c{i}" for i in range(len(cases))]
    json_schema = {"type": "object", "properties": {c: case["schema"] for c, case in zip(columns, cases)}}
    record = {c: case["value"] for c, case in zip(columns, cases)}
    df = typed(spark, json_schema, [record])
    (row,) = df.select(*[F.col(c).cast("string") for c in columns], NAMES.meta).collect()
    assert {c: row[c] for c in columns} == {c: case["expected"] for c, case in zip(columns, cases)}
    assert [change.asDict() for change in row[NAMES.meta].changes] == [
        {"field": c, **CHANGE} for c, case in zip(columns, cases) if case["nulled"]]


def test_schema_types_of_the_typed_table(spark) -> None:
    json_schema = {"type": "object", "properties": {
        "i": {"type": "integer"}, "d": {"type": "string", "format": "date-time"},
        "u": {"oneOf": [{"type": "integer"}, {"type": "string"}]}}}
    df = typed(spark, json_schema, [])
    assert df.dtypes == [
        ("i", "bigint"), ("d", "timestamp"), ("u", "struct<type:string,integer:bigint,string:string>"),
        ("_norm_raw_id", "string"), ("_norm_extracted_at", "timestamp"), ("_norm_load_id", "string"),
        ("_norm_id", "string"), ("_norm_meta", META_TYPE),
        ("_norm_normalized_at", "timestamp")]


def test_union_values_become_typed_disjoint_records(spark, load_case) -> None:
    doc = load_case("typing/unions.json")
    json_schema = {"type": "object", "properties": doc["unions"]}
    records = [{case["union"]: case["value"]} for case in doc["cases"]]
    df = typed(spark, json_schema, records)
    rows = {r[NAMES.raw_id]: r for r in df.select(
        NAMES.raw_id, NAMES.meta, *[F.to_json(F.col(u)).alias(u) for u in doc["unions"]]).collect()}
    for i, case in enumerate(doc["cases"]):
        row = rows[f"r{i}"]
        got = row[case["union"]]
        assert (json.loads(got) if got else None) == case["expected"], case
        nulled = case["union"] if case["nulled"] is True else case["nulled"]
        expected_changes = [{"field": nulled, **CHANGE}] if nulled else []
        assert [c.asDict() for c in row[NAMES.meta].changes] == expected_changes, case


def test_timestamps_without_offset_are_utc_whatever_the_session_zone(spark) -> None:
    json_schema = {"type": "object", "properties": {"t": {"type": "string", "format": "date-time"}}}
    df = typed(spark, json_schema, [{"t": "2024-03-10T02:30:00"}, {"t": "2024-06-01T10:00:00+02:00"}])
    previous = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        micros = [r[0] for r in df.orderBy(NAMES.raw_id).select(F.unix_micros("t")).collect()]
    finally:
        spark.conf.set("spark.sql.session.timeZone", previous)
    assert micros == [1710037800000000, 1717228800000000]


@pytest.mark.parametrize("zone, parser_policy", [("Asia/Kolkata", "CORRECTED"), ("UTC", "LEGACY")])
def test_timestamp_cases_read_the_same_in_other_sessions(spark, load_case, zone, parser_policy) -> None:
    """Typing takes another route outside UTC sessions (`to_timestamp_utc`): every case must agree."""
    cases = [c for c in load_case("typing/scalar_values.json")["cases"]
             if c["schema"].get("format") == "date-time" and "airbyte_type" not in c["schema"]]
    columns = [f"c{i}" for i in range(len(cases))]
    json_schema = {"type": "object", "properties": {c: case["schema"] for c, case in zip(columns, cases)}}
    settings = {"spark.sql.session.timeZone": zone, "spark.sql.legacy.timeParserPolicy": parser_policy}
    previous = {key: spark.conf.get(key) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        df = typed(spark, json_schema, [{c: case["value"] for c, case in zip(columns, cases)}])
        (row,) = df.select(*[F.unix_micros(c).alias(c) for c in columns], NAMES.meta).collect()
    finally:
        for key, value in previous.items():
            spark.conf.set(key, value)
    expected = [None if case["expected"] is None else
                int(datetime.fromisoformat(case["expected"]).replace(tzinfo=timezone.utc).timestamp() * 1_000_000)
                for case in cases]
    assert len(cases) >= 10
    assert [row[c] for c in columns] == expected
    assert [change.field for change in row[NAMES.meta].changes] == [
        c for c, case in zip(columns, cases) if case["nulled"]]


def test_records_not_readable_as_variant_are_kept_and_reported(spark) -> None:
    names = system_names("dlt")
    schema = schema_from_json_schema("s", {"type": "object", "properties": {"a": {"type": "integer"}}}, "dlt")
    raw = raw_frame(spark, names, ['{"a": 1, "a": 2}', {"a": 3}, [1, 2]])
    df = typed_root(parse_records(raw, names, schema), names, schema)
    rows = sorted((r[names.raw_id], r["a"], [c.asDict() for c in r[names.meta].changes]) for r in df.collect())
    assert rows == [
        ("r0", None, [{"field": "$", "change": "NULLED", "reason": "DESTINATION_SERIALIZATION_ERROR"}]),
        ("r1", 3, []),
    ]


def test_numbers_a_double_cannot_hold_are_truncated_with_a_change(spark, load_case) -> None:
    cases = load_case("typing/number_precision.json")["cases"]
    lines = [f'{{"id": {i}, "n": {case["text"]}, "items": [{{"n": {case["text"]}}}]}}' for i, case in enumerate(cases)]
    lines.append('{"id": 99, "n": 2.5, "big": 123456789012345678901234567890}')
    json_schema = {"type": "object", "properties": {
        "id": {"type": "integer"}, "n": {"type": "number"}, "big": {"type": "integer", "airbyte_type": "big_integer"},
        "items": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "number"}}}}}}
    schema = schema_from_json_schema("s", json_schema)
    tables = typed_tables(parse_records(raw_frame(spark, NAMES, lines), NAMES, schema), NAMES, schema)
    root = {r["id"]: r for r in tables["s"].select("id", F.col("n").cast("string").alias("n"), "big", NAMES.meta)
            .collect()}
    child = {r["id"]: r for r in tables["s__items"].join(
        tables["s"].select("id", F.col(NAMES.row_id(schema["tables"][0])).alias(NAMES.root_id)), NAMES.root_id)
        .select("id", F.col("n").cast("string").alias("n"), NAMES.meta).collect()}
    truncated = {"change": "TRUNCATED", "reason": "DESTINATION_FIELD_SIZE_LIMITATION"}
    for i, case in enumerate(cases):
        for table, row, field in (("root", root[i], "n"), ("child", child[i], "items.n")):
            changes = [c.asDict() for c in row[NAMES.meta].changes]
            nulled = [{"field": field, **CHANGE}] if case["expected"] is None else []
            assert (row["n"], changes) == (case["expected"], nulled + (
                [{"field": field, **truncated}] if case["truncated"] else [])), (table, case)
    assert (root[99]["n"], str(root[99]["big"]), root[99][NAMES.meta].changes) == (
        "2.5", "123456789012345678901234567890", [])
