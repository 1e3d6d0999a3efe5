"""An independent Delta reader (the `deltalake` package and its DataFusion engine, no Spark) sees every table `normalize_load` writes
for the sample packages as Spark does: same columns, row counts and values (SPEC §3)."""
from __future__ import annotations

from pathlib import Path

import polars as pl
import pyarrow as pa
import pytest
from deltalake import DeltaTable, QueryBuilder
from pyspark.sql import functions as F

from lakenorm_app.samples import SampleSpec, write_catalog, write_sample_packages
from normalization_core.configuration.config import parse_config
from normalization_core.io.delta import read_table
from normalization_core.passes.normalize import normalize_load

KEYS = {"_norm_loads": ["load_id", "stream"], "_norm_raw_": ["_norm_raw_id"], "_norm_versions": ["stream", "version"]}
"""Columns identifying a row: the registry's (load, stream), a raw table's raw id, else the row key."""
VALUES = {"orders_scd": ["id", "updated_at", "_norm_valid_from", "_norm_valid_to", "_norm_is_current"],
          "customers_scd": ["id", "email", "_norm_valid_from", "_norm_valid_to", "_norm_is_current"],
          "_norm_versions": ["version_hash", "schema"],
          "orders": ["id", "total", "customer__address__city", "updated_at"],
          "orders__line_items": ["sku", "qty", "_norm_parent_id", "_norm_list_idx"],
          "orders__line_items__discounts": ["code", "amount"], "orders__tags": ["value"],
          "customers": ["id", "email", "tier"], "events": ["event_id", "user_id", "occurred_at"],
          "_norm_loads": ["status", "raw_lines"], "_norm_raw_": ["_norm_line", "_norm_data", "_norm_error"]}


def key_columns(table: str) -> list[str]:
    prefix = next((p for p in KEYS if table.startswith(p)), None)
    return KEYS[prefix] if prefix else ["_norm_id"]


def value_columns(table: str) -> list[str]:
    return VALUES.get(table) or next(v for p, v in VALUES.items() if table.startswith(p))


def spark_rows(spark, path: str, columns: list[str]) -> list[tuple]:
    """The rows as plain values; timestamps as UTC microseconds, like Arrow's (tiny sample tables)."""
    df = read_table(spark, path)
    types = dict(df.dtypes)
    cols = [F.unix_micros(c).alias(c) if types[c] == "timestamp" else F.col(c) for c in columns]
    return sorted(tuple(r) for r in df.select(*cols).collect())


def delta_rows(path: str, columns: list[str]) -> list[tuple]:
    """The same rows through deltalake's own query engine (DataFusion); timestamps as microseconds."""
    delta = DeltaTable(path)
    types = {f.name: str(f.type) for f in delta.schema().fields}
    cols = [f"arrow_cast(\"{c}\", 'Int64') AS \"{c}\"" if "timestamp" in types[c] else f'"{c}"' for c in columns]
    table = QueryBuilder().register("t", delta).execute(f"SELECT {', '.join(cols)} FROM t").read_all()
    return sorted(zip(*(table.column(c).to_pylist() for c in columns)))


def arrow_rows(table: pa.Table, columns: list[str]) -> list[tuple]:
    """Rows of an Arrow table (from `to_pyarrow_table()` or polars); timestamps as UTC microseconds."""
    def values(name: str) -> list:
        column = table.column(name)
        if pa.types.is_timestamp(column.type):
            column = column.cast(pa.timestamp("us", column.type.tz)).cast(pa.int64())
        return column.to_pylist()
    return sorted(zip(*(values(c) for c in columns)))


def assert_every_reader_sees_spark_rows(spark, cfg, tables: list[str],
                                        read_by_spark: dict[str, list[tuple]] | None = None) -> None:
    """`read_by_spark`: the tables' `spark_rows` already read (of the key and value columns), else read here."""
    for table in tables:
        path = cfg.table_path("shop", table)
        columns = [*key_columns(table), *value_columns(table)]
        expected = (read_by_spark or {}).get(table) or spark_rows(spark, path, columns)
        assert expected, table
        assert arrow_rows(DeltaTable(path).to_pyarrow_table(), columns) == expected, table
        assert arrow_rows(pl.read_delta(path).to_arrow(), columns) == expected, table
        assert arrow_rows(pl.scan_delta(path).select(columns).collect().to_arrow(), columns) == expected, table


def _dedup_source(tmp_path: Path, **settings):
    (tmp_path / "landing").mkdir(exist_ok=True)
    write_catalog(tmp_path / "catalog.json")
    return parse_config({"warehouse": "wh", "sources": [{
        "name": "shop", "landing": "landing", "catalog": "catalog.json", **settings}]}, base_dir=tmp_path)


DEDUP_TABLES = ["orders_scd", "orders", "orders__line_items", "orders__line_items__discounts", "orders__tags",
                "customers_scd", "customers"]


@pytest.mark.slow
def test_every_table_reads_the_same_without_spark_once_deletion_vectors_are_off(spark, tmp_path: Path):
    """Tables written with deletion vectors lose them on the next load under the default setting (off); then
    delta-rs's query engine reads every table as Spark does, and every dedup table also opens with
    `to_pyarrow_table()` and polars."""
    cfg_on = _dedup_source(tmp_path, deletion_vectors=True, streams={"events": {"destination_sync_mode": "overwrite"}})
    ids = write_sample_packages(cfg_on.source("shop").landing, SampleSpec(packages=3, orders=8, customers=4, events=6))
    for load_id in ids[:2]:
        normalize_load(spark, cfg_on, "shop", load_id)
    with pytest.raises(Exception, match="deletionVectors"):
        DeltaTable(cfg_on.table_path("shop", "orders")).to_pyarrow_table()

    cfg = _dedup_source(tmp_path, streams={"events": {"destination_sync_mode": "overwrite"}})
    assert not cfg.source("shop").deletion_vectors
    for load_id in (ids[2], ids[1]):  # updates, and a re-run that replaces its own rows and MERGEs rows in place
        normalize_load(spark, cfg, "shop", load_id)

    tables = sorted(p.name for p in (tmp_path / "wh/shop").iterdir())
    assert {"_norm_raw_orders", "_norm_raw_customers", "_norm_raw_events", "orders", "orders__line_items",
            "orders__line_items__discounts", "orders__tags", "customers", "events", "_norm_loads",
            "orders_scd", "customers_scd", "_norm_versions"} <= set(tables)
    read_by_spark = {}
    for table in tables:
        path = cfg.table_path("shop", table)
        delta, columns = DeltaTable(path), [*key_columns(table), *value_columns(table)]
        read_by_spark[table] = spark_rows(spark, path, columns)  # every row: their number is Spark's count
        rows = QueryBuilder().register("t", delta).execute("SELECT count(*) AS n FROM t").read_all()
        assert rows.column("n").to_pylist() == [len(read_by_spark[table])] != [0], table
        assert [f.name for f in delta.schema().fields] == read_table(spark, path).columns, table
        assert delta_rows(path, columns) == read_by_spark[table], table
    assert_every_reader_sees_spark_rows(spark, cfg, DEDUP_TABLES, read_by_spark)  # (Spark's rows read once)
