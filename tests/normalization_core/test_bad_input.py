"""SPEC §10 bad input -> outcome, driven by tests/cases/bad_input/matrix.json: never a crash, never silent loss.

Rows already proven elsewhere name their tests (`covered_by`, checked to exist); the others run here end
to end through `normalize_load` on a one-stream package, typed from a catalog (`schema`) or inferred, under a
case's `convention`. With `readers`, every table written reads the same in delta-rs, polars and DuckDB as in
Spark (its columns, and each row's integers and texts).
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest
from deltalake import DeltaTable
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from normalization_core.columns import SystemNames
from normalization_core.configuration.config import parse_config
from normalization_core.io.delta import read_table
from normalization_core.io.versions import latest_versions_without_spark
from normalization_core.naming.conventions import system_names
from normalization_core.passes.normalize import normalize_load
from normalization_core.plans.source_tables import SourceTables, raw_table_name
from normalization_core.plans.stream_plans import stream_plans
from normalization_core.schema import StreamSchema, TableSchema
from normalization_core.transform.sql_text import col

TESTS = Path(__file__).parents[1]
MATRIX = json.loads((TESTS / "cases/bad_input/matrix.json").read_text(encoding="utf-8"))["rows"]
CASES = [case for row in MATRIX for case in row.get("cases", [])]
HUGE_KEY = "Huge Key " * 40
"""`$HUGE` in a case: a 360-character key, longer than any identifier limit."""


def huge(value: Any) -> Any:
    """The case with `$HUGE` replaced by HUGE_KEY wherever it is a key or a value."""
    return json.loads(json.dumps(value, ensure_ascii=False).replace("$HUGE", HUGE_KEY))


def write_source(root: Path, case: dict[str, Any]):
    stream = case.get("stream", "s")
    package = root / "landing" / "L1"
    (package / "data").mkdir(parents=True)
    (package / "data/part-0.jsonl").write_text("".join(line + "\n" for line in case["lines"]), encoding="utf-8")
    (package / "_manifest.json").write_text(json.dumps({
        "load_id": "L1", "created_at": "2024-06-01T00:00:00Z", "source": "src", "format": "records",
        "streams": {stream: {"files": ["data/part-0.jsonl"]}}}), encoding="utf-8")
    source = {"name": "src", "landing": "landing", "convention": case.get("convention", "native"),
              "max_table_nesting": case.get("max_table_nesting", 1000)}
    if "schema" in case:
        catalog = {"streams": [{"stream": {"name": stream, "json_schema": case["schema"]},
                                "destination_sync_mode": "append"}]}
        (root / "catalog.json").write_text(json.dumps(catalog), encoding="utf-8")
        source["catalog"] = "catalog.json"
    return parse_config({"warehouse": "wh", "sources": [source]}, base_dir=root), stream


def stream_schema(cfg, stream: str) -> StreamSchema:
    """The stream's schema: its catalog's, else the version inference stored."""
    source = cfg.source("src")
    plans = stream_plans(source)
    if stream in plans:
        return plans[stream].schema
    return latest_versions_without_spark(SourceTables(cfg, source).versions_path)[stream].schema


def table_by_json_path(schema: StreamSchema, joined: str) -> TableSchema:
    (table,) = [t for t in schema["tables"] if ".".join(t["json_path"]) == joined]
    return table


def typed_rows(spark, cfg, names: SystemNames, table: TableSchema, root_lines: dict[str, int]
               ) -> list[dict[str, Any]]:
    """Values as strings by raw key path, and changed fields; in line order, then list index (tiny test data)."""
    df = read_table(spark, cfg.table_path("src", table["name"]))
    root = table["parent"] is None
    key, index = (names.row_id(table), F.lit(0)) if root else (names.root_id, col(names.list_idx))
    values = [col(c["name"]).cast("string").alias(".".join(c["path"])) for c in table["columns"]]
    rows = df.select(*values, col(key).alias("#root"), index.alias("#index"),
                     col(names.meta).changes.field.alias("#changes")).collect()
    rows = sorted(rows, key=lambda r: (root_lines[r["#root"]], r["#index"]))
    return [{"values": {".".join(c["path"]): r[".".join(c["path"])] for c in table["columns"]},
             "changes": sorted(r["#changes"])} for r in rows]


def root_lines(spark, cfg, names: SystemNames, schema: StreamSchema, raw: DataFrame) -> dict[str, int]:
    """Root row key -> line of its record in the package (tiny test data)."""
    root = schema["tables"][0]
    df = read_table(spark, cfg.table_path("src", root["name"])).join(raw, names.raw_id)
    return {r[0]: r[1] for r in df.select(col(names.row_id(root)), col(names.line)).collect()}


def assert_readers_see_sparks_tables(spark, folder: Path) -> None:
    """Every table in `folder` has Spark's columns in delta-rs, polars and DuckDB (over its Parquet files, as
    without column mapping), and Spark's integers and texts in each row."""
    for path in sorted(p for p in folder.iterdir() if (p / "_delta_log").is_dir()):
        df = read_table(spark, str(path))
        plain = [c for c, t in df.dtypes if t in ("bigint", "string")]
        expected = sorted(tuple(r) for r in df.select(*[col(c) for c in plain]).collect())  # tiny test tables
        delta = DeltaTable(str(path))
        arrow = delta.to_pyarrow_table()
        polars = pl.read_delta(str(path)).to_arrow()
        duck = duckdb.connect().sql(f"SELECT * FROM read_parquet({delta.file_uris()!r})").to_arrow_table()
        for reader, table in (("delta-rs", arrow), ("polars", polars), ("duckdb", duck)):
            assert table.column_names == df.columns, (path.name, reader)
            got = sorted(zip(*(table.column(c).to_pylist() for c in plain))) if plain else []
            assert got == expected, (path.name, reader)


def files_outside(root: Path, *inside: str) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and not any(p.is_relative_to(root / i) for i in inside)
            and p.name != "catalog.json"]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_bad_input_outcome(spark, tmp_path, case):
    case = huge(case)
    cfg, stream = write_source(tmp_path, case)
    names = system_names(cfg.source("src").convention)
    for _ in range(case.get("runs", 1)):
        result = normalize_load(spark, cfg, "src", "L1")
    expect = case["expect"]
    schema = stream_schema(cfg, stream)

    raw = read_table(spark, cfg.table_path("src", raw_table_name(cfg.source("src"), stream)))
    raw_rows = raw.orderBy(names.line).select(names.raw_id, names.line, names.data, names.error).collect()
    assert [r[names.data] for r in raw_rows] == case["lines"]  # raw keeps every line exactly, once
    if "raw_errors" in expect:
        assert [r[names.error] for r in raw_rows] == expect["raw_errors"]
    assert result.streams[stream].rejected_lines == expect.get("rejected", 0)
    lines = root_lines(spark, cfg, names, schema, raw)

    for joined, want in expect["tables"].items():
        table = table_by_json_path(schema, joined)
        got = typed_rows(spark, cfg, names, table, lines)
        assert [g["values"] for g in got] == want["values"], joined
        assert [g["changes"] for g in got] == [sorted(c) for c in want["changes"]], joined

    if "collisions" in expect:
        assert len(schema["collisions"]) == expect["collisions"]
    tables = [t["name"] for t in schema["tables"]] + [raw_table_name(cfg.source("src"), stream)]
    columns = [c["name"] for t in schema["tables"] for c in t["columns"]]
    if "legal_names" in expect:
        assert all(re.fullmatch(expect["legal_names"], n) for n in tables + columns), tables + columns
    assert all(re.fullmatch(expect.get("table_names", "[A-Za-z0-9_]+"), n) for n in tables), tables
    assert max(map(len, tables + columns)) <= expect.get("max_name_length", 255)
    assert files_outside(tmp_path, "wh/src", "landing") == []
    if case.get("readers"):
        assert_readers_see_sparks_tables(spark, tmp_path / "wh/src")


def test_every_row_is_run_here_or_proven_by_a_named_test():
    for row in MATRIX:
        assert row.get("cases") or row.get("covered_by"), row["input"]
        for ref in row.get("covered_by", []):
            path, function = ref.split("::")
            source = (TESTS.parent / path).read_text(encoding="utf-8")
            assert re.search(rf"^def {re.escape(function)}\(", source, re.MULTILINE), ref
