"""Row counts from Delta metadata; OPTIMIZE and VACUUM on a real table."""
from __future__ import annotations

from delta.tables import DeltaTable
from pyspark.sql import functions as F

from normalization_core.io.delta import read_table
from normalization_core.io.maintenance import maintain_tables, table_row_count, table_schema


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


def test_maintenance_compacts_and_vacuums_existing_tables_and_skips_missing_ones(spark, tmp_path):
    path = str(tmp_path / "t")
    three_small_commits(spark, path)
    done = maintain_tables(spark, [path, str(tmp_path / "missing")])
    assert [(d.path, d.files_removed, d.files_added) for d in done] == [(path, 6, 1)]
    operations = [r["operation"] for r in DeltaTable.forPath(spark, path).history().orderBy("version").collect()]
    assert operations[-3:] == ["OPTIMIZE", "VACUUM START", "VACUUM END"]
    assert table_row_count(spark, path) == 30
    assert sorted(r["load"] for r in read_table(spark, path).select("load").distinct().collect()) == ["L1", "L2", "L3"]
