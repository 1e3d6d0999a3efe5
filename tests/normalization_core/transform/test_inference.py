"""Inference on the executors (SPEC §5.2): value kinds, (path, kind) pairs, typing with variant columns."""
from __future__ import annotations

import json
import random
from decimal import Decimal

import pytest
from pyspark.sql import functions as F

from normalization_core.columns import NATIVE as N
from normalization_core.schema.inference import infer_schema
from normalization_core.transform.observed_kinds import FIRST_DEPTH, observed_types
from normalization_core.transform.nesting import typed_tables
from normalization_core.transform.parse import parse_records


def raw_rows(spark, lines: list[str], partitions: int = 2):
    rows = [(line, None, f"r{i:05d}", "L1", "part.jsonl", i + 1) for i, line in enumerate(lines)]
    df = spark.createDataFrame(rows, f"{N.data} string, {N.error} string, {N.raw_id} string, {N.load_id} string, "
                                     f"{N.file} string, {N.line} long")
    return df.repartition(partitions).withColumn(N.extracted_at, F.current_timestamp())


def typed(spark, lines: list[str], stream: str = "things"):
    rows = raw_rows(spark, lines)
    schema = infer_schema(stream, observed_types(rows, N))
    return schema, typed_tables(parse_records(rows, N, schema), N, schema)


def test_each_value_gets_dlts_kind_type_and_value(spark, load_case):
    values = load_case("inference/value_kinds.json")["values"]
    line = "{" + ", ".join(f'"x{i}": {case["json"]}' for i, case in enumerate(values)) + "}"
    observed = observed_types(raw_rows(spark, [line], 1), N)
    schema, tables = typed(spark, [line])
    root = tables["things"]
    row, dtypes = root.first(), dict(root.dtypes)  # one row
    assert row[N.meta]["changes"] == []
    for i, case in enumerate(values):
        key = f"x{i}"
        assert {kind for path, kind in observed if path == (f"k:{key}",)} == ({case["kind"]} if case["kind"] else set())
        if case["data_type"] is None:
            assert key not in dtypes, case["json"]
            continue
        assert dtypes[key] == case["data_type"], case["json"]
        value = row[key]
        if isinstance(value, Decimal) or case["data_type"] == "timestamp":
            value = str(value)
        assert value == case["typed"], case["json"]


@pytest.mark.parametrize("case", [c["name"] for c in json.load(open(
    __import__("pathlib").Path(__file__).parents[2] / "cases/inference/schemas.json"))["cases"]])
def test_records_give_the_expected_tables_and_columns(spark, load_case, case):
    spec = next(c for c in load_case("inference/schemas.json")["cases"] if c["name"] == case)
    schema, tables = typed(spark, [json.dumps(r) for r in spec["records"]])
    got = {t["name"]: [(c["name"], c["data_type"]) for c in t["columns"]] for t in schema["tables"]}
    assert got == {name: list(columns.items()) for name, columns in spec["tables"].items()}
    for name, columns in spec["tables"].items():
        dtypes = dict(tables[name].dtypes)
        assert {c: dtypes[c] for c in columns} == columns


def test_a_value_that_does_not_fit_goes_to_the_variant_column_without_a_change(spark):
    _, tables = typed(spark, ['{"id": 1}', '{"id": "abc"}', '{"id": false}', '{"other": true}'])
    rows = {r[N.raw_id]: r for r in tables["things"].collect()}
    assert (rows["r00000"]["id"], rows["r00000"]["id__v_text"], rows["r00000"]["id__v_bool"]) == (1, None, None)
    assert (rows["r00001"]["id"], rows["r00001"]["id__v_text"]) == (None, "abc")
    assert (rows["r00002"]["id"], rows["r00002"]["id__v_bool"]) == (None, False)
    assert (rows["r00003"]["id"], rows["r00003"]["other"]) == (None, True)
    assert all(r[N.meta]["changes"] == [] for r in rows.values())


def test_the_inferred_schema_does_not_depend_on_order_or_partitioning(spark):
    lines = [json.dumps(r) for r in [
        {"id": 1, "v": [1, "a"], "o": {"x": 1}}, {"id": "abc", "o": {"x": 2.5, "y": None}},
        {"id": 9223372036854775808, "items": [{"q": True}, {"q": "2024-01-01T00:00:00Z"}]},
        {"t": "2024-01-02", "items": [[1]], "m": {"k": 1}}, {"m": [1]}, {"n": None},
    ] * 5]
    reference = infer_schema("s", observed_types(raw_rows(spark, lines, 1), N))
    rng = random.Random(7)
    for partitions in (2, 5):
        shuffled = rng.sample(lines, len(lines))
        assert infer_schema("s", observed_types(raw_rows(spark, shuffled, partitions), N)) == reference


def test_max_table_nesting_keeps_deeper_values_as_json(spark):
    rows = raw_rows(spark, ['{"f": [{"l": ["a"], "v": 120, "lo": [{"e": {"v": 1}}]}]}'])
    schema = infer_schema("d", observed_types(rows, N), max_table_nesting=1)
    assert [(t["name"], [(c["name"], c["data_type"]) for c in t["columns"]]) for t in schema["tables"]] == [
        ("d", []), ("d__f", [("l", "string"), ("lo", "string"), ("v", "bigint")])]
    child = typed_tables(parse_records(rows, N, schema), N, schema)["d__f"].first()
    assert (json.loads(child["l"]), json.loads(child["lo"]), child["v"]) == (["a"], [{"e": {"v": 1}}], 120)


def test_values_nested_deeper_than_the_first_gathering_are_observed(spark):
    deep: object = {"v": 1}
    for _ in range(FIRST_DEPTH * 2):
        deep = {"a": deep}
    lines = [json.dumps({"deep": deep, "arrays": [[[[[["x"]]]]]]}), '{"flat": true}']
    observed = observed_types(raw_rows(spark, lines), N)
    assert (("k:deep",) + ("k:a",) * FIRST_DEPTH * 2 + ("k:v",), "bigint") in observed
    assert (("k:arrays",) + ("[]",) * 6, "text") in observed and (("k:flat",), "bool") in observed
    assert max(len(path) for path, _ in observed) == FIRST_DEPTH * 2 + 2
