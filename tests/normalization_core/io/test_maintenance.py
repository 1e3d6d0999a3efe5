"""Row counts from Delta metadata; OPTIMIZE and VACUUM on a real table."""
from __future__ import annotations

import json

import pyarrow as pa
from delta.tables import DeltaTable
from deltalake import DeltaTable as RustDeltaTable
from pyspark.sql import functions as F

from normalization_core.io import delta, maintenance
from normalization_core.io.delta import read_table
from normalization_core.io.maintenance import (
    _logged_rows_and_schema,
    logged_version_and_rows,
    maintain_tables,
    table_row_count,
    table_rows_and_schema,
    table_schema,
    table_size_bytes,
)


def three_small_commits(spark, path):
    for load in ("L1", "L2", "L3"):
        spark.range(10).withColumn("load", F.lit(load)).repartition(2).write.format("delta").mode("append").save(path)


def test_row_count_and_schema_come_from_the_log_without_reading_data_files(spark, tmp_path):
    path = str(tmp_path / "t")
    three_small_commits(spark, path)
    assert table_row_count(spark, path) == 30
    assert [(f.name, f.dataType.simpleString()) for f in table_schema(spark, path).fields] == [
        ("id", "bigint"), ("load", "string")]
    plan = read_table(spark, path).groupBy().count()._jdf.queryExecution().executedPlan().toString()
    assert "LocalTableScan" in plan and "FileScan" not in plan


NESTED = ("id BIGINT, at TIMESTAMP, day DATE, total DECIMAL(12,2), tags ARRAY<STRING>, "
          "customer STRUCT<name: STRING, address: STRUCT<zip: STRING>>, items ARRAY<STRUCT<sku: STRING, qty: INT>>")


def nested_rows(spark, ids: range):
    rows = [(i, None, None, None, [f"t{i}"], (f"c{i}", (f"{i:05d}",)), [(f"s{i}", i)]) for i in ids]
    return spark.createDataFrame(rows, NESTED)


def test_rows_and_schema_are_read_from_the_log_by_delta_rs_and_equal_sparks(spark, tmp_path):
    path = str(tmp_path / "t")
    nested_rows(spark, range(0, 40)).write.format("delta").save(path)
    nested_rows(spark, range(40, 55)).write.format("delta").mode("append").save(path)
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id < 5")  # no deletion vectors: files rewritten
    expected = (table_row_count(spark, path), table_schema(spark, path))
    assert expected[0] == 50
    assert _logged_rows_and_schema(path, None) == expected  # answered by the log, not by Spark
    assert table_rows_and_schema(spark, path) == expected
    assert logged_version_and_rows(path) == (2, 50)  # written, appended, deleted from
    assert logged_version_and_rows(str(tmp_path / "missing")) is None


def test_the_size_of_a_table_is_its_current_files_bytes_and_0_without_a_table(spark, tmp_path):
    path = tmp_path / "t"
    three_small_commits(spark, str(path))
    on_disk = sum(f.stat().st_size for f in path.glob("*.parquet"))
    assert table_size_bytes(str(path)) == on_disk > 0
    spark.sql(f"DELETE FROM delta.`{path}` WHERE load = 'L1'")  # the L1 files leave the table, not the folder
    assert 0 < table_size_bytes(str(path)) < on_disk
    assert table_size_bytes(str(tmp_path / "missing")) == 0


def test_rows_come_from_spark_when_the_log_cannot_count_them(spark, tmp_path):
    with_vectors = str(tmp_path / "dv")
    spark.range(100).write.format("delta").option("delta.enableDeletionVectors", "true").save(with_vectors)
    spark.sql(f"DELETE FROM delta.`{with_vectors}` WHERE id < 10")  # a deletion vector: the file still says 100
    without_stats = str(tmp_path / "no_stats")
    spark.conf.set("spark.databricks.delta.stats.collect", "false")
    try:
        spark.range(7).write.format("delta").save(without_stats)
    finally:
        spark.conf.unset("spark.databricks.delta.stats.collect")
    for path, rows in ((with_vectors, 90), (without_stats, 7)):
        assert _logged_rows_and_schema(path, None) is None
        assert logged_version_and_rows(path) == (1 if path == with_vectors else 0, None)  # a version, no count
        assert table_rows_and_schema(spark, path) == (rows, table_schema(spark, path))


def test_maintenance_compacts_and_vacuums_existing_tables_and_skips_missing_ones(spark, tmp_path):
    path = str(tmp_path / "t")
    three_small_commits(spark, path)
    done = maintain_tables(spark, [path, str(tmp_path / "missing")])
    assert [(d.path, d.files_removed, d.files_added) for d in done] == [(path, 6, 1)]
    operations = [r["operation"] for r in DeltaTable.forPath(spark, path).history().orderBy("version").collect()]
    assert operations[-3:] == ["OPTIMIZE", "VACUUM START", "VACUUM END"]
    assert table_row_count(spark, path) == 30
    assert sorted(r["load"] for r in read_table(spark, path).select("load").distinct().collect()) == ["L1", "L2", "L3"]


def test_a_table_kept_in_key_order_is_compacted_in_that_order_only_when_it_has_too_many_files(
        spark, tmp_path, monkeypatch):
    for module in (delta, maintenance):
        monkeypatch.setattr(module, "KEY_ORDERED_FILE_ROWS", 100)
    path = str(tmp_path / "t")
    for load in range(10):  # 20 small files, each holding ids from all over
        (spark.range(30).select(((F.col("id") * 10 + load) * 7 % 300).alias("id"), F.lit(load).alias("load"))
         .repartition(2).write.format("delta").mode("append").save(path))
    rows = sorted(read_table(spark, path).collect())

    [done] = maintain_tables(spark, [path], key_orders={path: ["id"]})
    assert done.files_removed == 20 and 3 <= done.files_added <= 4  # 300 rows: files of at most 100
    assert sorted(read_table(spark, path).collect()) == rows
    files = pa.table(RustDeltaTable(path).get_add_actions(flatten=True)).to_pylist()
    ranges = sorted((f["min.id"], f["max.id"]) for f in files)
    assert all(high < next_low for (_, high), (next_low, _) in zip(ranges, ranges[1:])), ranges
    version = DeltaTable.forPath(spark, path).history().where("operation = 'WRITE'").agg({"version": "max"}).first()[0]
    commit = tmp_path / "t" / "_delta_log" / f"{version:020d}.json"
    adds = [json.loads(line)["add"] for line in commit.read_text().splitlines() if '"add"' in line]
    assert adds and not any(a["dataChange"] for a in adds)  # a rewrite, no new data for change readers

    [again] = maintain_tables(spark, [path], key_orders={path: ["id"]})
    assert (again.files_removed, again.files_added) == (0, 0)
    operations = [r["operation"] for r in DeltaTable.forPath(spark, path).history().orderBy("version").collect()]
    assert operations[-5:] == ["WRITE", "VACUUM START", "VACUUM END", "VACUUM START", "VACUUM END"]


def test_a_load_committing_while_a_table_is_rewritten_in_key_order_loses_no_row(spark, tmp_path, monkeypatch):
    """A commit after the rewrite planned its read of the table and before its own write: the rewrite reads the
    table as of its own transaction, so the new row is in what it writes (or the commit is a conflict, retried)."""
    path = str(tmp_path / "t")
    for load in range(3):
        spark.range(10).select((F.col("id") * 3 + load).alias("id")).write.format("delta").mode("append").save(path)
    writer = delta._writer

    def writer_after_a_load_commits(df, order_by, counted=None, **options):
        spark.range(1).select(F.lit(99).cast("long").alias("id")).write.format("delta").mode("append").save(path)
        return writer(df, order_by, counted, **options)

    monkeypatch.setattr(delta, "_writer", writer_after_a_load_commits)
    delta.rewrite_in_key_order(spark, path, ["id"])
    assert sorted(r["id"] for r in read_table(spark, path).collect()) == sorted([*range(30), 99])
