"""Compaction with the loads: rows kept, key order kept, nothing done twice, safe beside a load's write."""
from __future__ import annotations

import threading

from deltalake import DeltaTable as RustDeltaTable
from pyspark.sql import functions as F

from normalization_core.io import compaction
from normalization_core.io.compaction import TableFiles, compact_tables, needs_compaction, table_files
from normalization_core.io.delta import read_table
from normalization_core.io.load_writes import replace_loads


def appended_loads(spark, path, loads=("L1", "L2", "L3"), ids=range(10)):
    """One commit per load, two files each, rows (id, load)."""
    for load in loads:
        rows = spark.createDataFrame([(i, load) for i in ids], "id BIGINT, load STRING").repartition(2)
        rows.write.format("delta").mode("append").save(path)


def rows(spark, path) -> list[tuple]:
    return sorted(tuple(r) for r in read_table(spark, path).collect())


def version(path) -> int:
    return RustDeltaTable(path).version()


def test_small_files_are_compacted_once_with_every_row_kept(spark, tmp_path, monkeypatch):
    monkeypatch.setattr(compaction, "COMPACT_AT_FILES", 4)
    path = str(tmp_path / "events")
    appended_loads(spark, path)
    before, committed = rows(spark, path), version(path)
    assert table_files(path).small == 6

    [done] = compact_tables(spark, [path, str(tmp_path / "missing")])
    assert (done.files_removed, done.files_added) == (6, 1)
    assert rows(spark, path) == before
    assert RustDeltaTable(path).history(1)[0]["operation"] == "OPTIMIZE"  # one commit, no data changed
    assert version(path) == committed + 1

    assert compact_tables(spark, [path]) == []  # below the threshold now: nothing to do
    assert version(path) == committed + 1


def test_a_table_kept_in_key_order_is_rewritten_in_key_order_not_bin_packed(spark, tmp_path, monkeypatch):
    monkeypatch.setattr(compaction, "COMPACT_AT_FILES", 4)
    path = str(tmp_path / "history")
    appended_loads(spark, path, ("L1", "L2"), range(0, 40, 2))
    appended_loads(spark, path, ("L3",), range(1, 40, 2))  # keys from all over the first loads' range
    before = rows(spark, path)

    [done] = compact_tables(spark, [path], key_orders={path: ("id",)})
    assert done.files_removed == 6
    assert rows(spark, path) == before
    actions = RustDeltaTable(path).get_add_actions(flatten=True)
    ranges = sorted(zip(actions.column("min.id").to_pylist(), actions.column("max.id").to_pylist()))
    assert all(high < low for (_, high), (low, _) in zip(ranges, ranges[1:]))  # files hold disjoint key ranges
    assert compact_tables(spark, [path], key_orders={path: ("id",)}) == []


def test_compaction_beside_a_load_replacing_its_rows_loses_no_row_and_doubles_none(spark, tmp_path, monkeypatch):
    """Whichever commits first, the other runs again on the table it left (optimistic concurrency)."""
    monkeypatch.setattr(compaction, "COMPACT_AT_FILES", 2)
    path = str(tmp_path / "events")
    appended_loads(spark, path)
    again = spark.createDataFrame([(i, "L2") for i in range(100, 105)], "id BIGINT, load STRING")
    start = threading.Barrier(2)
    failures = []

    def run(action):
        start.wait()
        try:
            action()
        except Exception as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    threads = [threading.Thread(target=run, args=(lambda: compact_tables(spark, [path]),)),
               threading.Thread(target=run, args=(lambda: replace_loads(again, path, "load", ["L2"]),))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    expected = sorted([(i, load) for load in ("L1", "L3") for i in range(10)] + [(i, "L2") for i in range(100, 105)])
    assert rows(spark, path) == expected
    assert read_table(spark, path).where(F.col("load") == "L2").count() == 5


def test_a_pass_looks_at_the_tables_it_committed_to_every_fifth_version_and_at_system_tables(spark, tmp_path,
                                                                                             monkeypatch):
    from normalization_core.configuration.config import parse_config
    from normalization_core.passes.compaction import compact_written
    from normalization_core.plans.source_tables import SourceTables

    monkeypatch.setattr(compaction, "COMPACT_AT_FILES", 4)
    (tmp_path / "landing").mkdir()
    config = parse_config({"warehouse": "wh", "sources": [{"name": "shop", "landing": "landing"}]}, base_dir=tmp_path)
    tables = SourceTables.of(config, "shop")
    for table in ("raw_a", "raw_b", "_norm_loads"):
        appended_loads(spark, tables.path(table))  # 6 small files each, versions 0-2

    compact_written(spark, tables, ["raw_a", "raw_b"], {}, {"raw_a": 5, "raw_b": 3})
    assert [table_files(tables.path(t)).files for t in ("raw_a", "raw_b", "_norm_loads")] == [1, 6, 1]
    assert rows(spark, tables.path("raw_a")) == rows(spark, tables.path("raw_b"))


def test_tiny_files_start_a_compaction_at_ten_and_a_large_pass_s_files_only_at_fifty():
    """A small load's files (KBs) are compacted every ~10 loads; a pass of 1M records leaves ~20 files of 4-7 MB per
    table, which wait until 50 small files (rewriting them at once would cost what writing them did)."""
    assert needs_compaction(TableFiles(files=10, small=10, tiny=10, rows=None))
    assert not needs_compaction(TableFiles(files=9, small=9, tiny=9, rows=None))
    assert not needs_compaction(TableFiles(files=20, small=20, tiny=0, rows=None))
    assert not needs_compaction(TableFiles(files=49, small=49, tiny=9, rows=None))
    assert needs_compaction(TableFiles(files=50, small=50, tiny=0, rows=None))
    assert not needs_compaction(TableFiles(files=80, small=0, tiny=0, rows=None))  # large files are never rewritten
