"""Hostile lines end to end (SPEC §10): raw keeps every line readable and losslessly, a value no table can hold
costs that value alone, and every table reads the same in Spark, delta-rs, polars and DuckDB. Cases:
tests/cases/bad_input/hostile_lines.json (one package, a catalog stream and an inferred one)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa
import pytest
from deltalake import DeltaTable
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from normalization_core.configuration.config import parse_config
from normalization_core.io.delta import read_table
from normalization_core.naming.conventions import system_names
from normalization_core.passes.normalize import normalize_load
from normalization_core.passes.rebuild import rebuild_stream
from tests.conftest import CASES

CASE = json.loads((CASES / "bad_input" / "hostile_lines.json").read_text(encoding="utf-8"))
NAMES = system_names("native")
STREAMS = ("typed", "inferred")


def as_bytes(line: str) -> bytes:
    """A case's line as its bytes (U+DC80..U+DCFF: bytes that are not UTF-8)."""
    return line.encode("utf-8", "surrogateescape")


def write_package(landing: Path, load_id: str, lines: list[str]) -> None:
    folder = landing / load_id
    folder.mkdir(parents=True)
    for stream in STREAMS:
        (folder / f"{stream}.jsonl").write_bytes(b"".join(as_bytes(line) + b"\n" for line in lines))
    (folder / "_manifest.json").write_text(json.dumps({
        "load_id": load_id, "created_at": "2024-06-01T00:00:00Z", "source": "shop", "format": "records",
        "streams": {s: {"files": [f"{s}.jsonl"]} for s in STREAMS}}))


def spark_values(df: DataFrame) -> list[dict[str, Any]]:
    """Rows as plain values, sorted: timestamps as UTC microseconds, dates as ISO text, binary as bytes."""
    types = dict(df.dtypes)
    columns = [F.unix_micros(c).alias(c) if types[c] == "timestamp" else
               F.col(c).cast("string").alias(c) if types[c] == "date" else F.col(c) for c in df.columns]
    rows = [r.asDict(recursive=True) for r in df.select(*columns).collect()]
    return sorted(({k: bytes(v) if isinstance(v, bytearray) else v for k, v in r.items()} for r in rows), key=repr)


def arrow_values(table: pa.Table) -> list[dict[str, Any]]:
    def plain(column: pa.ChunkedArray) -> pa.ChunkedArray:
        if pa.types.is_timestamp(column.type):
            return column.cast(pa.timestamp("us", column.type.tz)).cast(pa.int64())
        return column.cast(pa.string()) if pa.types.is_date(column.type) else column
    return sorted(pa.table({n: plain(table.column(n)) for n in table.column_names}).to_pylist(), key=repr)


def assert_every_reader_reads_what_spark_reads(spark, path: str) -> None:
    expected = spark_values(read_table(spark, path))
    assert arrow_values(DeltaTable(path).to_pyarrow_table()) == expected, path
    assert arrow_values(pl.read_delta(path).to_arrow()) == expected, path
    # DuckDB's own Parquet reader over the table's current files (its Delta extension is not installed here);
    files = duckdb.read_parquet(DeltaTable(path).file_uris(), union_by_name=True)  # (files before a column was added)
    assert arrow_values(files.to_arrow_table()) == expected, path


def load_rows(spark, cfg, table: str, lines: dict[str, int]) -> list[dict[str, Any]]:
    """The rows of load L1 in a typed table: data columns cast to string and changes, in line order then list
    index (`lines`: root row key -> line; tiny test data)."""
    df = read_table(spark, cfg.table_path("shop", table)).where(F.col(NAMES.load_id) == "L1")
    data = [c for c in df.columns if not c.startswith("_norm")]
    child = NAMES.root_id in df.columns
    key, index = (NAMES.root_id, F.col(NAMES.list_idx)) if child else (NAMES.row_id(table), F.lit(0))
    rows = df.select(*[F.col(c).cast("string") for c in data], F.col(key).alias("#root"), index.alias("#index"),
                     F.col(NAMES.meta).changes.alias("#changes")).collect()
    rows = sorted(rows, key=lambda r: (lines[r["#root"]], r["#index"]))
    return [{"values": {c: r[c] for c in data},
             "changes": sorted([c["field"], c["change"], c["reason"]] for c in r["#changes"])} for r in rows]


def root_lines(spark, cfg, stream: str) -> dict[str, int]:
    """Root row key -> line of its record, for load L1."""
    raw = read_table(spark, cfg.table_path("shop", f"_norm_raw_{stream}")).where(F.col(NAMES.load_id) == "L1")
    root = read_table(spark, cfg.table_path("shop", stream)).join(raw, NAMES.raw_id)
    return {r[0]: r[1] for r in root.select(NAMES.row_id(stream), NAMES.line).collect()}


def typed_tables(spark, cfg) -> dict[str, list[dict[str, Any]]]:
    tables = sorted(p.name for p in Path(cfg.table_path("shop", "x")).parent.iterdir() if not p.name.startswith("_"))
    return {t: spark_values(read_table(spark, cfg.table_path("shop", t)).drop(NAMES.normalized_at)) for t in tables}


@pytest.mark.slow
def test_hostile_lines_keep_raw_lossless_and_readable_and_cost_one_value_each(spark, tmp_path):
    (tmp_path / "catalog.json").write_text(json.dumps({"streams": [
        {"stream": {"name": "typed", "json_schema": CASE["schema"]}, "destination_sync_mode": "append"}]}))
    (tmp_path / "landing").mkdir()
    cfg = parse_config({"warehouse": "wh", "sources": [{"name": "shop", "landing": "landing",
                                                         "catalog": "catalog.json"}]}, base_dir=tmp_path)
    landing = cfg.source("shop").landing
    write_package(landing, "L0", CASE["before"])
    write_package(landing, "L1", CASE["lines"])
    normalize_load(spark, cfg, "shop", "L0")
    for stream in STREAMS:  # raw tables as lakenorm wrote them before `_norm_data_bytes` existed
        path = cfg.table_path("shop", f"_norm_raw_{stream}")
        old = read_table(spark, path).drop(NAMES.data_bytes)
        old.write.format("delta").mode("overwrite").option("overwriteSchema", "true").save(path)
        assert NAMES.data_bytes not in read_table(spark, path).columns

    result = normalize_load(spark, cfg, "shop", "L1")

    for stream in STREAMS:
        raw = read_table(spark, cfg.table_path("shop", f"_norm_raw_{stream}"))
        rows = raw.orderBy(NAMES.load_id, NAMES.line).collect()
        assert [r[NAMES.data] for r in rows] == CASE["before"] + [r["data"] for r in CASE["raw"]]
        assert [r[NAMES.error] for r in rows] == [None] + [r["error"] for r in CASE["raw"]]
        not_utf8 = [as_bytes(line) if as_bytes(line) != line.encode("utf-8", "replace") else None
                    for line in CASE["lines"]]
        assert [r[NAMES.data_bytes] and bytes(r[NAMES.data_bytes]) for r in rows] == [None] + not_utf8
        assert all(r[NAMES.data].encode("utf-8") for r in rows)  # (Python refuses to encode text that is not UTF-8)
        assert (result.streams[stream].raw_lines, result.streams[stream].rejected_lines) == (5, 1)
    for stream in STREAMS:
        lines = root_lines(spark, cfg, stream)
        for table, want in CASE[stream].items():
            assert load_rows(spark, cfg, table, lines) == want, table

    written = sorted(p.name for p in (tmp_path / "wh" / "shop").iterdir())
    data_tables = [t for t in written if t.startswith("_norm_raw_") or not t.startswith("_")]
    assert len(data_tables) == 8
    for table in data_tables:
        assert_every_reader_reads_what_spark_reads(spark, cfg.table_path("shop", table))

    before = typed_tables(spark, cfg)
    for stream in STREAMS:
        rebuild_stream(spark, cfg, "shop", stream)
    assert typed_tables(spark, cfg) == before
