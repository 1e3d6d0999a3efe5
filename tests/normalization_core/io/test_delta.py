"""Delta helpers: rows materialized from a table stay what they were when read."""
from __future__ import annotations

from normalization_core.io.delta import materialized, read_table


def test_materialized_rows_are_read_once_and_their_plan_holds_no_table_scan(spark, tmp_path):
    path = str(tmp_path / "table")
    spark.range(4).write.format("delta").save(path)

    rows = materialized(read_table(spark, path).where("id % 2 = 1"))
    spark.range(10, 13).write.format("delta").mode("overwrite").save(path)

    assert sorted(r.id for r in rows.collect()) == [1, 3]
    assert sorted(r.id for r in rows.where("id > 1").collect()) == [3]
    assert path not in rows._jdf.queryExecution().analyzed().toString()
    assert sorted(r.id for r in read_table(spark, path).collect()) == [10, 11, 12]
