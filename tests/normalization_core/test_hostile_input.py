"""Hostile input as a property (SPEC §10): keys, values and bytes that real producers do emit, under every
convention, catalog-typed and inferred, in every disposition.

Each example is one package of three streams (one per disposition, each typed from a catalog or inferred) holding
records with arbitrary Unicode keys and values (control characters, NUL, lone surrogate escapes, SQL and path
characters, 300-character keys that truncate alike, keys that collide after naming or are named like system
columns), nesting up to 64 levels, integers past 64 bits and numbers past a double, and lines that are not UTF-8
or not JSON. Whatever it holds: the run completes; raw has one row per line, byte-exact; the typed tables together
hold every scalar of every record, or a change names its field; every table reads the same in Spark, delta-rs,
polars and DuckDB; nothing is written outside `<warehouse>/<source>/`.

`make test` runs a few examples per convention (`LAKENORM_HOSTILE_EXAMPLES`, default 2, the same ones every run);
a longer search: `LAKENORM_HOSTILE_EXAMPLES=200 LAKENORM_HOSTILE_RANDOM=1 pytest tests/normalization_core/test_hostile_input.py`.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest
from deltalake import DeltaTable
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from normalization_core.configuration.config import LakenormConfig, parse_config
from normalization_core.io.delta import read_table
from normalization_core.naming.conventions import system_names
from normalization_core.passes.normalize import normalize_loads
from normalization_core.plans.source_tables import SourceTables
from normalization_core.plans.stream_plans import history_table, stream_plans
from tests.normalization_core.hostile_records import (
    ANY_TEXT,
    FRAGMENTS,
    cell_scalars,
    json_schema_of,
    leaves,
    line_bytes,
    records,
)

CONVENTIONS = ("native", "dlt", "airbyte", "direct")
DISPOSITIONS = ("append", "overwrite", "append_dedup")
EXAMPLES = int(os.environ.get("LAKENORM_HOSTILE_EXAMPLES", "2"))
RANDOM = os.environ.get("LAKENORM_HOSTILE_RANDOM") == "1"
NOT_RECORDS = [b"not json", b"[1, 2]", b"", b'{"id": 1} \xff', b'"text"', b'{"id": 1} {"id": 2}']
"""Lines that are no JSON object (one is not UTF-8 either): kept in raw, not typed."""


@dataclass(frozen=True)
class HostileStream:
    name: str
    disposition: str
    typed: bool
    """Typed from a catalog (else inferred)."""
    records: list[dict[str, Any]]
    lines: list[bytes]
    """Every line of the stream's file: the records' (`line_of[i]` is record i's) and the other lines."""
    line_of: list[int]
    wrong_type: bool = False
    """The catalog declares its first text key an integer: that key's values are NULLED with a change."""


@st.composite
def packages(draw: st.DrawFn) -> list[HostileStream]:
    """Streams of one package: a hostile name each (made distinct by its position), a disposition and a typing."""
    combos = [(disposition, draw(st.booleans())) for disposition in DISPOSITIONS]
    streams = []
    for index, (disposition, typed) in enumerate(combos):
        name = draw(st.one_of(st.sampled_from(FRAGMENTS["streams"]), ANY_TEXT.filter(str.strip))) + str(index)
        found = draw(records(draw(st.integers(1, 3))))
        others = draw(st.lists(st.sampled_from(NOT_RECORDS), max_size=2))
        ascii_only = draw(st.booleans())
        lines = [line_bytes(r, ascii_only) for r in found]
        at = draw(st.permutations(range(len(lines) + len(others))))
        ordered: list[bytes] = [b""] * len(at)
        for position, line in zip(at, lines + others):
            ordered[position] = line
        streams.append(HostileStream(name, disposition, typed, found, ordered, list(at[:len(found)]),
                                     draw(st.booleans()) if typed else False))
    return streams


def write_source(root: Path, convention: str, streams: list[HostileStream]) -> LakenormConfig:
    package = root / "landing" / "L1"
    package.mkdir(parents=True)
    for index, stream in enumerate(streams):
        (package / f"part-{index}.jsonl").write_bytes(b"".join(line + b"\n" for line in stream.lines))
    (package / "_manifest.json").write_text(json.dumps({
        "load_id": "L1", "created_at": "2024-06-01T00:00:00Z", "source": "src", "format": "records",
        "streams": {s.name: {"files": [f"part-{i}.jsonl"]} for i, s in enumerate(streams)}}), encoding="utf-8")
    catalog = {"streams": [_catalog_stream(s) for s in streams if s.typed]}
    (root / "catalog.json").write_text(json.dumps(catalog), encoding="utf-8")
    settings_ = {s.name: {"destination_sync_mode": s.disposition, "primary_key": "id"} for s in streams if not s.typed}
    source = {"name": "src", "landing": "landing", "catalog": "catalog.json", "convention": convention,
              "streams": settings_}
    return parse_config({"warehouse": "wh", "sources": [source]}, base_dir=root)


def _catalog_stream(stream: HostileStream) -> dict[str, Any]:
    keys = dict.fromkeys(k for r in stream.records for k in r)
    properties = {k: json_schema_of([r.get(k) for r in stream.records]) for k in keys}
    if stream.wrong_type:
        text_key = next((k for k, p in properties.items() if p.get("type") == ["null", "string"]), None)
        if text_key is not None:
            properties[text_key] = {"type": ["null", "integer"]}
    entry = {"stream": {"name": stream.name, "json_schema": {"type": "object", "properties": properties}},
             "destination_sync_mode": stream.disposition}
    return {**entry, "primary_key": [["id"]]} if stream.disposition == "append_dedup" else entry


@pytest.mark.parametrize("convention", CONVENTIONS)
@settings(max_examples=EXAMPLES, deadline=None, derandomize=not RANDOM, database=None,
          phases=tuple(Phase) if RANDOM else (Phase.explicit, Phase.generate),  # a failing example shrinks slowly
          suppress_health_check=list(HealthCheck))
@given(streams=packages())
def test_a_hostile_package_loses_nothing_and_every_reader_reads_it(spark, tmp_path_factory, convention, streams):
    root = tmp_path_factory.mktemp("hostile")
    cfg = write_source(root, convention, streams)
    normalize_loads(spark, cfg, "src", ["L1"])
    tables = SourceTables.of(cfg, "src")
    raw_ids = {s.name: assert_raw_is_every_line_exactly(spark, tables, s) for s in streams}
    plans = stream_plans(cfg.source("src"), stored_in=tables)
    for stream in streams:
        assert_every_scalar_is_typed_or_changed(spark, tables, plans[stream.name], stream, raw_ids[stream.name])
    for folder in sorted(p.parent for p in (root / "wh/src").glob("*/_delta_log")):
        assert_every_reader_reads_the_same(spark, str(folder))
    outside = [p for p in root.rglob("*") if p.is_file() and not p.is_relative_to(root / "wh/src")
               and not p.is_relative_to(root / "landing") and p.name != "catalog.json"]
    assert outside == []


def assert_raw_is_every_line_exactly(spark, tables: SourceTables, stream: HostileStream) -> dict[int, str]:
    """One raw row per line holding its exact bytes (valid UTF-8 in the data column, the bytes beside it when
    they are not UTF-8); returns the raw id of each line."""
    names = tables.names
    raw = read_table(spark, tables.raw_path(stream.name))
    kept = [c for c, t in raw.dtypes if t == "binary"]
    rows = raw.orderBy(names.line).collect()
    assert [r[names.line] for r in rows] == list(range(1, len(stream.lines) + 1)), stream.name
    for row, line in zip(rows, stream.lines):
        text = row[names.data]
        assert text is None or text.encode("utf-8", "surrogatepass").decode("utf-8") == text, (stream.name, line)
        exact = next((bytes(row[c]) for c in kept if row[c] is not None), None)
        assert (exact if exact is not None else text.encode("utf-8")) == line, (stream.name, row[names.line])
    return {r[names.line]: r[names.raw_id] for r in rows}


def assert_every_scalar_is_typed_or_changed(spark, tables: SourceTables, plan, stream: HostileStream,
                                            raw_ids: dict[int, str]) -> None:
    names = tables.names
    schema = plan.schema
    root_doc = schema["tables"][0]
    read_root = history_table(plan, names) or root_doc["name"]
    by_root: dict[str, list[tuple[list, list]]] = {}
    root_key_of_raw: dict[str, str] = {}
    for doc in schema["tables"]:
        name = read_root if doc is root_doc else doc["name"]
        columns = [c["name"] for c in doc["columns"]]
        key = names.row_id(doc) if doc is root_doc else names.root_id
        df = read_table(spark, tables.path(name))
        selected = [*columns, key, names.meta] + ([names.raw_id] if doc is root_doc else [])
        for row in df.select(*[f"`{c.replace('`', '``')}`" for c in selected]).collect():
            cells = [s for c, v in zip(doc["columns"], row) for s in cell_scalars(v, c.get("json_text", False))]
            changed = [c["field"] for c in (row[names.meta]["changes"] or [])]
            by_root.setdefault(row[key], []).append((cells, changed))
            if doc is root_doc:
                root_key_of_raw[row[names.raw_id]] = row[key]
    for record, line in zip(stream.records, stream.line_of):
        rows = by_root.get(root_key_of_raw.get(raw_ids[line + 1]), [])
        cells = {s for found, _ in rows for s in found}
        changes = {f for _, changed in rows for f in changed}
        lost = [(".".join(path), value) for path, value in leaves(record)
                if value not in cells and not _named(path, changes)]
        assert lost == [], (stream.name, line + 1, sorted(changes))


def _named(path: tuple[str, ...], changes: set[str]) -> bool:
    """A change names the field at `path` (or a containing field that was NULLED whole)."""
    dotted = ".".join(path)
    return any(dotted == field or dotted.startswith(field + ".") for field in changes if field != "$")


def assert_every_reader_reads_the_same(spark, path: str) -> None:
    spark_df = read_table(spark, path)
    columns = spark_df.columns
    expected = _rows((tuple(r) for r in spark_df.collect()), spark=True)
    delta = DeltaTable(path)
    assert [f.name for f in delta.schema().fields] == columns, path
    assert _rows(_arrow_rows(delta.to_pyarrow_table(), columns)) == expected, path
    assert _rows(_arrow_rows(pl.read_delta(path).to_arrow(), columns)) == expected, path
    files = delta.file_uris()
    if files:
        by_duckdb = duckdb.connect().execute("SELECT * FROM read_parquet(?, union_by_name = true)",
                                             [files]).to_arrow_table()
        common = [c for c in columns if c in by_duckdb.column_names]
        picked = [columns.index(c) for c in common]
        assert _rows(_arrow_rows(by_duckdb, common)) == sorted((tuple(r[i] for i in picked) for r in expected), key=repr), path


def _arrow_rows(table, columns: list[str]) -> list[tuple]:
    return list(zip(*(table.column(c).to_pylist() for c in columns))) if table.num_rows else []


def _rows(rows, spark: bool = False) -> list[tuple]:
    return sorted((tuple(_canonical(v, spark) for v in row) for row in rows), key=repr)


def _canonical(value: Any, spark: bool) -> Any:
    """One form per value whatever reader read it: instants as epoch seconds, structs as tuples of their values,
    maps as sorted pairs (Spark gives a dict, Arrow a list of (key, value) pairs, polars `{key, value}` structs)."""
    if isinstance(value, datetime):
        return ("instant", value.timestamp())
    if isinstance(value, date):
        return ("date", value.isoformat())
    if isinstance(value, float):
        return "NaN" if value != value else value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, Decimal):
        return ("decimal", value.normalize() if value.is_finite() else str(value))
    if hasattr(value, "asDict"):  # a Spark struct (a Row is a tuple: before the sequences)
        return tuple(_canonical(v, spark) for v in value.asDict().values())
    pairs = _map_pairs(value, spark)
    if pairs:  # (an empty map is an empty list to Arrow)
        return ("map", tuple(sorted(((_canonical(k, spark), _canonical(v, spark)) for k, v in pairs), key=repr)))
    if isinstance(value, dict) and not spark:
        return tuple(_canonical(v, spark) for v in value.values())
    if isinstance(value, (list, tuple, dict)):
        return tuple(_canonical(v, spark) for v in value)
    return value


def _map_pairs(value: Any, spark: bool) -> list[tuple[Any, Any]] | None:
    if isinstance(value, dict):
        return list(value.items()) if spark else None
    if spark or not isinstance(value, list) or not value:
        return None
    if all(isinstance(v, tuple) and len(v) == 2 for v in value):
        return value
    if all(isinstance(v, dict) and set(v) == {"key", "value"} for v in value):
        return [(v["key"], v["value"]) for v in value]
    return None
