"""Round trip (SPEC §3, §4.2, §5.1): random catalogs and conforming records, normalized with `normalize_load`,
re-assembled from the root and child Delta tables, equal the input after the declared typing.

Re-assembly follows the schema document only: each column's `path` puts its value back into the row
object, each child table's rows (joined by parent key, ordered by list index) become the array at its
`path`. The expected side is computed from the generated JSON Schema, independently of the library.
Conforming input must also record no `_norm_meta` change. `make test` runs the same few examples every run (a
suite that lands does not depend on a draw); a longer, random search:
`LAKENORM_PROPTEST_EXAMPLES=200 LAKENORM_PROPTEST_RANDOM=1 pytest tests/normalization_core/test_roundtrip_properties.py`.
"""
from __future__ import annotations

import hashlib
import json
import os
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

from normalization_core.configuration.config import parse_config
from normalization_core.io.delta import read_table
from normalization_core.naming.conventions import system_names
from normalization_core.passes.normalize import normalize_load
from normalization_core.plans.source_tables import raw_table_name
from normalization_core.plans.stream_plans import stream_plans
from normalization_core.schema import TableSchema, child_tables

EXAMPLES = int(os.environ.get("LAKENORM_PROPTEST_EXAMPLES", "3"))
RANDOM = os.environ.get("LAKENORM_PROPTEST_RANDOM") == "1"
KEYS = ["a", "a b", "a_b", "A", "ü", "Ü", "", "value", "list", "id", "x__y", "x", "y", "日本", "😀",
        "_norm_id", "_dlt_id", "aB"]
"""Object keys: colliding after normalization (`a b`/`a_b`, `A`/`a`, `x__y` vs `x`.`y`), unicode, empty,
system-like and the names dlt uses itself (`value`, `list`)."""
SCALARS = ["integer", "number", "boolean", "string", "date", "date-time", "date-time-ntz", "time",
           "big_integer", "json_object"]
UNION_OPTIONS = ["integer", "number", "string", "boolean"]
STREAMS = ["Orders", "my-events"]
INT64 = 2**63
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
MICROS_PER_DAY = 86_400_000_000

# --- schemas: ("scalar", kind) | ("union", kinds) | ("object", ((key, node), ...)) | ("array", node)


def nodes(depth: int) -> st.SearchStrategy:
    leaves = st.one_of(
        st.sampled_from(SCALARS).map(lambda k: ("scalar", k)),
        st.lists(st.sampled_from(UNION_OPTIONS), min_size=2, max_size=3, unique=True)
        .map(lambda ks: ("union", tuple(ks))),
    )
    if depth == 0:
        return leaves
    inner = nodes(depth - 1)
    return st.one_of(leaves, objects(inner), inner.map(lambda n: ("array", n)))


def objects(inner: st.SearchStrategy, min_size: int = 1) -> st.SearchStrategy:
    props = st.lists(st.tuples(st.sampled_from(KEYS), inner), min_size=min_size, max_size=4, unique_by=lambda p: p[0])
    return props.map(lambda ps: ("object", tuple(ps)))


def json_schema(node: tuple) -> dict[str, Any]:
    """The JSON Schema of a node; every value may also be null."""
    kind = node[0]
    if kind == "object":
        return {"type": ["null", "object"], "properties": {k: json_schema(n) for k, n in node[1]}}
    if kind == "array":
        return {"type": ["null", "array"], "items": json_schema(node[1])}
    if kind == "union":
        return {"type": ["null", *node[1]]}
    return {
        "integer": {"type": ["null", "integer"]}, "number": {"type": ["null", "number"]},
        "boolean": {"type": ["null", "boolean"]}, "string": {"type": ["null", "string"]},
        "date": {"type": ["null", "string"], "format": "date"},
        "date-time": {"type": ["null", "string"], "format": "date-time"},
        "date-time-ntz": {"type": ["null", "string"], "format": "date-time",
                          "airbyte_type": "timestamp_without_timezone"},
        "time": {"type": ["null", "string"], "format": "time"},
        "big_integer": {"type": ["null", "integer"], "airbyte_type": "big_integer"},
        "json_object": {"type": ["null", "object"]},
    }[node[1]]


# --- conforming values

TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=8)
FINITE = st.floats(allow_nan=False, allow_infinity=False)
OFFSETS = st.integers(-14 * 60, 14 * 60).map(lambda m: timezone(timedelta(minutes=m)))
INTEGRAL_FLOATS = st.integers(-(2**53), 2**53).map(float)
"""JSON writes these as `12.0` or, from 1e16 on, `1e+16`: integers by JSON Schema all the same."""
DATETIMES = st.datetimes(datetime(1000, 1, 2), datetime(9999, 12, 30))


def iso_time(t: time, tz: timezone | None) -> str:
    return t.replace(tzinfo=tz).isoformat()


SCALAR_VALUES: dict[str, st.SearchStrategy] = {
    "integer": st.one_of(st.integers(-INT64, INT64 - 1), INTEGRAL_FLOATS),
    "number": st.one_of(FINITE, st.integers(-INT64, INT64 - 1)),
    "boolean": st.booleans(),
    "string": TEXT,
    "date": st.dates(date(1000, 1, 1), date(9999, 12, 31)).map(date.isoformat),
    "date-time": st.builds(lambda d, tz: d.replace(tzinfo=tz).isoformat(), DATETIMES, OFFSETS),
    "date-time-ntz": DATETIMES.map(datetime.isoformat),
    "time": st.builds(iso_time, st.times(), st.none() | OFFSETS),
    "big_integer": st.one_of(st.integers(-(10**38) + 1, 10**38 - 1), INTEGRAL_FLOATS),
    "json_object": st.dictionaries(st.sampled_from(KEYS), st.integers(-1000, 1000) | TEXT | st.booleans(), max_size=3),
}
UNION_VALUES: dict[str, st.SearchStrategy] = {
    "integer": st.integers(-INT64, INT64 - 1),
    "number": FINITE.filter(lambda f: not f.is_integer()),  # an integral number takes the integer option
    "string": TEXT, "boolean": st.booleans(),
}


def values(node: tuple, nullable: bool = True) -> st.SearchStrategy:
    kind = node[0]
    if kind == "object":
        value = st.fixed_dictionaries({}, optional={k: values(n) for k, n in node[1]})
    elif kind == "array":
        value = st.lists(values(node[1]), max_size=3)
    elif kind == "union":
        value = st.one_of(*[UNION_VALUES[k] for k in node[1]])
    else:
        value = SCALAR_VALUES[node[1]]
    return st.none() | value if nullable else value


@st.composite
def streams(draw) -> dict[str, tuple[tuple, list[dict]]]:
    """Per stream: its record schema (an object) and 1 to 4 conforming records."""
    out = {}
    for name in STREAMS:
        record = draw(objects(nodes(2)))
        out[name] = (record, draw(st.lists(values(record, nullable=False), min_size=1, max_size=4)))
    return out


# --- the input after the declared typing: objects hold every declared key, arrays are lists (never null)


def expected(value: Any, node: tuple) -> Any:
    kind = node[0]
    if kind == "object":
        value = value or {}
        return {k: expected(value.get(k), n) for k, n in node[1]}
    if kind == "array":
        return [expected(v, node[1]) for v in value or []]
    if value is None:
        return None
    if kind == "union":
        tag = {bool: "boolean", str: "string", float: "number"}.get(type(value))
        tag = tag or ("integer" if "integer" in node[1] else "number")
        return tag, float(value) if tag == "number" else value
    return {
        "integer": int, "number": float, "boolean": bool, "string": str, "big_integer": lambda v: Decimal(int(v)),
        "date": date.fromisoformat, "date-time-ntz": datetime.fromisoformat, "json_object": dict,
        "date-time": lambda v: (datetime.fromisoformat(v) - EPOCH) // timedelta(microseconds=1),
        "time": time_micros,
    }[node[1]](value)


def time_micros(text: str) -> int:
    stamp = datetime.fromisoformat("1970-01-02T" + text)
    if stamp.tzinfo is not None:
        stamp = stamp.astimezone(timezone.utc).replace(tzinfo=None)
    return (stamp - datetime(1970, 1, 1)) // timedelta(microseconds=1) % MICROS_PER_DAY


# --- writing a package and its catalog


def write_source(root: Path, convention: str, records: dict[str, tuple[tuple, list[dict]]]):
    landing = root / "landing"
    package = landing / "L1"
    package.mkdir(parents=True)
    catalog = {"streams": [{"stream": {"name": name, "json_schema": {**json_schema(node), "type": "object"}},
                            "destination_sync_mode": "append"} for name, (node, _) in records.items()]}
    (root / "catalog.json").write_text(json.dumps(catalog, ensure_ascii=False), encoding="utf-8")
    manifest_streams = {}
    for i, (name, (_, rows)) in enumerate(records.items()):
        rel = f"s{i}/part-0.jsonl"
        (package / rel).parent.mkdir()
        (package / rel).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        manifest_streams[name] = {"files": [rel], "records": len(rows)}
    (package / "_manifest.json").write_text(json.dumps({
        "load_id": "L1", "created_at": "2024-06-01T00:00:00Z", "source": "src", "format": "records",
        "streams": manifest_streams}, ensure_ascii=False), encoding="utf-8")
    return parse_config({"warehouse": "wh", "sources": [{"name": "src", "landing": "landing", "catalog": "catalog.json",
                                                         "convention": convention}]}, base_dir=root)


# --- re-assembly from the Delta tables


def set_path(obj: dict, path: list[str], value: Any) -> None:
    for key in path[:-1]:
        obj = obj.setdefault(key, {})
    obj[path[-1]] = value


def column_value(value: Any, column: dict) -> Any:
    if value is None:
        return None
    if column["logical_type"] == "union":
        return value["type"], value[value["type"]]
    if column["logical_type"] == "json":
        return json.loads(value)
    return value


def read_rows(spark, cfg, names, table: TableSchema) -> list[dict]:
    """Data columns (timestamps as UTC microseconds), keys, list index and changes: test data, tiny."""
    df = read_table(spark, cfg.table_path("src", table["name"]))
    data = [(F.unix_micros(c["name"]) if c["logical_type"] == "timestamp" else F.col(c["name"])).alias(c["name"])
            for c in table["columns"]]
    links = [names.raw_id] if table["parent"] is None else [
        F.col(names.parent_id(table["parent"])).alias("#parent"), names.list_idx]
    rows = df.select(*data, F.col(names.row_id(table["name"])).alias("#id"), *links,
                     F.col(names.meta).changes.alias("#changes")).collect()
    return [r.asDict() for r in rows]


def reassemble(spark, cfg, names, schema) -> dict[str, Any]:
    """The records rebuilt from the stream's tables, by raw id; also every recorded change."""
    rows = {t["name"]: read_rows(spark, cfg, names, t) for t in schema["tables"]}
    changes = [c for table_rows in rows.values() for r in table_rows for c in r["#changes"]]

    def children(table: TableSchema, parent_id: str) -> list[dict]:
        return sorted((r for r in rows[table["name"]] if r["#parent"] == parent_id), key=lambda r: r[names.list_idx])

    def build(table: TableSchema, row: dict) -> Any:
        if table["element"] == "scalar":
            (column,) = table["columns"]
            return column_value(row[column["name"]], column)
        if table["element"] == "array":
            (inner,) = child_tables(schema, table["name"])
            return [build(inner, r) for r in children(inner, row["#id"])]
        obj: dict = {}
        for column in table["columns"]:
            if column.get("sets_row_key"):  # the row's key (dlt's `_dlt_id`): compared apart, see `own_row_keys`
                obj[OWN_ROW_KEY] = row[column["name"]]
                continue
            set_path(obj, column["path"], column_value(row[column["name"]], column))
        for child in child_tables(schema, table["name"]):
            set_path(obj, child["path"], [build(child, r) for r in children(child, row["#id"])])
        return obj

    root = schema["tables"][0]
    return {r[names.raw_id]: build(root, r) for r in rows[root["name"]]}, changes


def raw_ids_in_line_order(spark, cfg, names, stream: str) -> list[str]:
    raw = read_table(spark, cfg.table_path("src", raw_table_name(cfg.source("src"), stream)))
    return [r[0] for r in raw.orderBy(names.line).select(names.raw_id).collect()]


def check_round_trip(spark, root: Path, convention: str, records) -> None:
    cfg = write_source(root, convention, records)
    normalize_load(spark, cfg, "src", "L1")
    names = system_names(convention)
    plans = stream_plans(cfg.source("src"))
    for name, (node, rows) in records.items():
        rebuilt, changes = reassemble(spark, cfg, names, plans[name].schema)
        ids = raw_ids_in_line_order(spark, cfg, names, name)
        assert len(rebuilt) == len(rows) == len(ids)
        own_keys = own_row_keys(plans[name].schema)
        for raw_id, record in zip(ids, rows):
            want, got = expected(record, node), dict(rebuilt[raw_id])
            row_key = got.pop(OWN_ROW_KEY, None)
            for key in own_keys:
                assert_row_key(row_key, want.pop(key, None), raw_id)
            assert got == want, (name, record)
        assert changes == [], name


OWN_ROW_KEY = "#own_row_key"
OWN_ROW_KEYS = {  # records with and without their own `_dlt_id`, typed as a number, a union and a string
    "a": (("object", (("_dlt_id", ("scalar", "integer")),)), [{}, {"_dlt_id": 7}]),
    "b": (("object", (("_dlt_id", ("union", ("integer", "number"))),)), [{}, {"_dlt_id": 2.5}]),
    "c": (("object", (("_dlt_id", ("scalar", "string")), ("v", ("scalar", "integer")))),
          [{"_dlt_id": "own", "v": 1}, {"_dlt_id": "", "v": 2}, {"v": 3}]),
}


def own_row_keys(schema) -> list[str]:
    """The root keys whose value is the row's key (under dlt's system names: a record's own `_dlt_id`)."""
    return [c["path"][0] for c in schema["tables"][0]["columns"] if c.get("sets_row_key")]


def assert_row_key(row_key: str, own: Any, raw_id: str) -> None:
    """A record's own `_dlt_id` is its row's key where its text is not empty (a string as written, another value
    as Spark writes it as text), else the key derived from the raw id, as dlt makes it."""
    if own is None or own == "":
        assert row_key == key128_of(raw_id), row_key
    elif isinstance(own, str):
        assert row_key == own
    else:
        assert row_key and row_key != key128_of(raw_id), (own, row_key)


def key128_of(raw_id: str) -> str:
    """The row key derived from a record's raw id (`transform.keys.key128` of one part)."""
    return hashlib.sha256(raw_id.encode("utf-8")).hexdigest()[:32]


@pytest.mark.slow
@pytest.mark.parametrize("convention", ["native", "dlt"])
def test_records_survive_normalization_and_reassembly(spark, tmp_path_factory, convention):
    @settings(max_examples=EXAMPLES, deadline=None, database=None, print_blob=True, derandomize=not RANDOM,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(records=streams())
    @example(records=OWN_ROW_KEYS)
    def round_trip(records):
        check_round_trip(spark, tmp_path_factory.mktemp("rt"), convention, records)

    round_trip()
