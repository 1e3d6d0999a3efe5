"""Each record is read from the tree when Spark's JSON reader converts it cleanly, else from its VARIANT;
both give the same typed rows (tests/cases/parse/)."""
from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from normalization_core.naming.conventions import system_names
from normalization_core.schema import schema_from_json_schema
from normalization_core.transform import parse
from normalization_core.transform.internal_columns import CLEAN, RECORD, TREE
from normalization_core.transform.nesting import typed_tables
from normalization_core.transform.parse import ParsePath, parse_records, stream_records, with_parsed_records
from normalization_core.transform.raw import LOAD_ID, raw_rows, raw_schema, record_lines
from normalization_core.transform.rows import tree_parser

NAMES = system_names("native")
CASE = "parse/tree_and_variant.json"


def lines_of(case: dict) -> list[str]:
    return [r.get("text") or json.dumps(r["record"], ensure_ascii=False) for r in case["records"]]


def raw_frame(spark, lines: list[str]) -> DataFrame:
    extracted = datetime(2024, 6, 1, tzinfo=timezone.utc)
    rows = [(f"r{i:02d}", "L1", extracted, text, "part.jsonl", i + 1, None, None) for i, text in enumerate(lines)]
    return spark.createDataFrame(rows, raw_schema(NAMES))


def classified_lines(spark, case: dict) -> DataFrame:
    """The case's records as classified lines of one load (`records` format)."""
    lines = spark.createDataFrame([("shop", "part.jsonl", i + 1, text, None) for i, text in enumerate(lines_of(case))],
                                  "stream string, file string, line long, text string, bytes binary")
    return record_lines(lines, F.lit(datetime(2024, 6, 1, tzinfo=timezone.utc))).withColumn(LOAD_ID, F.lit("L1"))


def table_rows(tables: dict[str, DataFrame]) -> dict[str, list[str]]:
    """Every row of every table as sorted JSON (the normalization time left out)."""
    return {name: sorted(r[0] for r in df.drop(NAMES.normalized_at).select(F.to_json(F.struct("*"))).collect())
            for name, df in tables.items()}


@pytest.fixture(scope="module")
def case(load_case):
    case = load_case(CASE)
    case["schema"] = schema_from_json_schema(case["stream"], case["json_schema"])
    return case


def test_records_the_reader_converts_cleanly_are_read_from_the_tree(spark, case) -> None:
    parsed = parse_records(raw_frame(spark, lines_of(case)), NAMES, case["schema"])
    clean = [r[CLEAN] for r in parsed.rows.orderBy(NAMES.raw_id).select(CLEAN).collect()]
    assert clean == [r["clean"] for r in case["records"]]


def test_tree_and_variant_give_the_same_tables(spark, case, monkeypatch) -> None:
    raw = raw_frame(spark, lines_of(case))
    both = table_rows(typed_tables(parse_records(raw, NAMES, case["schema"]), NAMES, case["schema"]))
    monkeypatch.setattr(parse, "tree_parser", lambda schema: None)
    variant_only = table_rows(typed_tables(parse_records(raw, NAMES, case["schema"]), NAMES, case["schema"]))
    assert both == variant_only
    assert len(both["shop"]) == len(case["records"]) and len(both["shop__items__discounts"]) == 3


def test_records_parsed_with_their_lines_give_the_same_tables(spark, case) -> None:
    classified = classified_lines(spark, case)
    with_trees = with_parsed_records(classified, {"shop": case["schema"]})
    carried = stream_records(with_trees, NAMES, "shop", all_clean=False)
    plain = raw_rows(classified, NAMES)
    assert table_rows(typed_tables(parse_records(carried, NAMES, case["schema"]), NAMES, case["schema"])) == \
        table_rows(typed_tables(parse_records(plain, NAMES, case["schema"]), NAMES, case["schema"]))


def test_inferred_streams_and_the_airbyte_layout_have_no_tree() -> None:
    cars = {"type": "object", "properties": {"specs": {"type": "object", "properties": {"hp": {"type": "integer"}}}}}
    assert tree_parser(schema_from_json_schema("cars", cars, "airbyte")) is None
    assert tree_parser(schema_from_json_schema("cars", cars)) is not None
    assert tree_parser({**schema_from_json_schema("cars", cars), "inferred": True}) is None


def test_parsing_says_which_parse_the_records_took(spark, case) -> None:
    classified = classified_lines(spark, case)
    with_trees = with_parsed_records(classified, {"shop": case["schema"]})
    carried = parse_records(stream_records(with_trees, NAMES, "shop", all_clean=True), NAMES, case["schema"])
    assert (carried.path, carried.with_lines) == (ParsePath.TREE, True)
    assert carried.rows.columns[-1:] == [TREE]
    per_stream = parse_records(raw_frame(spark, lines_of(case)), NAMES, case["schema"])
    assert (per_stream.path, per_stream.with_lines) == (ParsePath.BOTH, False)
    assert per_stream.rows.columns[-3:] == [TREE, RECORD, CLEAN]
    inferred = parse_records(raw_frame(spark, lines_of(case)), NAMES, {**case["schema"], "inferred": True})
    assert (inferred.path, inferred.rows.columns[-1:]) == (ParsePath.VARIANT, [RECORD])


def test_a_key_twice_costs_the_record_at_the_top_level_only(spark, case) -> None:
    """A VARIANT refuses duplicate keys: the top-level keys are compared, a nested object's key takes its last
    value on the tree; single-quoted text, which the JSON reader accepts and a VARIANT refuses, is parsed to tell."""
    lines = ['{"id": 21, "customer": {"id": 1, "id": 2}}', '{"id": 22, "name": "x", "name": "y"}',
             "{'id': 23}", '{"id": 24, "name": "O\'Brien"}']
    parsed = parse_records(raw_frame(spark, lines), NAMES, case["schema"])
    tables = typed_tables(parsed, NAMES, case["schema"])
    rows = {r["id"]: r for r in tables["shop"].collect()}
    clean = {r[NAMES.raw_id]: r[CLEAN] for r in parsed.rows.select(NAMES.raw_id, CLEAN).collect()}
    assert clean == {"r00": True, "r01": False, "r02": False, "r03": True}
    assert rows[21]["customer__id"] == 2 and rows[24]["name"] == "O'Brien"
    nulled = [r for r in tables["shop"].collect() if r["id"] is None]
    assert [c.asDict() for r in nulled for c in r[NAMES.meta].changes] == [
        {"field": "$", "change": "NULLED", "reason": "DESTINATION_SERIALIZATION_ERROR"}] * 2
