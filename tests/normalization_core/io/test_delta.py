"""Delta helpers: materialized rows stay what they were when read; MERGEs by key create, merge and count."""
from __future__ import annotations

import pyarrow as pa
import pytest
from delta.tables import DeltaTable
from deltalake import DeltaTable as RustDeltaTable
from deltalake import write_deltalake

from normalization_core.io import delta
from normalization_core.io.delta import (
    align_deletion_vectors,
    materialized,
    merge_by_key,
    merged_table_properties,
    read_table,
    table_version,
)
from normalization_core.io.load_writes import replace_loads_counted
from normalization_core.io.storage import open_delta_table


def test_materialized_rows_are_read_once_and_their_plan_holds_no_table_scan(spark, tmp_path):
    path = str(tmp_path / "table")
    spark.range(4).write.format("delta").save(path)

    rows = materialized(read_table(spark, path).where("id % 2 = 1"))
    spark.range(10, 13).write.format("delta").mode("overwrite").save(path)

    assert sorted(r.id for r in rows.collect()) == [1, 3]
    assert sorted(r.id for r in rows.where("id > 1").collect()) == [3]
    assert path not in rows._jdf.queryExecution().analyzed().toString()
    assert sorted(r.id for r in read_table(spark, path).collect()) == [10, 11, 12]


def _merge(spark, path, rows, deletion_vectors=True):
    source = lambda: spark.createDataFrame(rows, "k long, v string, gone boolean")  # noqa: E731
    return merge_by_key(spark, path, source, ["k"], "gone", merged_table_properties(deletion_vectors))


def test_merge_by_key_creates_the_table_then_merges_and_counts_its_own_changes(spark, tmp_path):
    path = str(tmp_path / "table")

    assert _merge(spark, path, [(1, "a", False), (2, "b", False), (3, "c", True)]) == 2
    assert _merge(spark, path, [(2, "B", False), (4, "d", False), (1, None, True)]) == 3

    assert sorted(tuple(r) for r in read_table(spark, path).collect()) == [(2, "B"), (4, "d")]
    assert DeltaTable.forPath(spark, path).detail().first().properties == {"delta.enableDeletionVectors": "true"}


def test_replacing_loads_creates_the_table_then_replaces_only_those_loads_rows_and_counts_them(spark, tmp_path):
    path, calls = str(tmp_path / "table"), []

    def rows(data):
        def build():
            calls.append(len(data))
            return spark.createDataFrame(data, "load string, v long")
        return build

    properties = merged_table_properties(False)
    assert replace_loads_counted(spark, path, rows([("L1", 1), ("L1", 2), ("L2", 3)]), "load", ["L1", "L2"],
                                 properties) == 3
    assert replace_loads_counted(spark, path, rows([("L2", 30), ("L3", 40)]), "load", ["L2", "L3"]) == 2
    assert replace_loads_counted(spark, path, rows([]), "load", ["L9"]) == 0

    assert sorted(tuple(r) for r in read_table(spark, path).collect()) == [("L1", 1), ("L1", 2), ("L2", 30), ("L3", 40)]
    assert DeltaTable.forPath(spark, path).detail().first().properties == properties  # set when created
    assert calls == [3, 2, 0]


def _features(spark, path):
    return set(DeltaTable.forPath(spark, path).detail().first().tableFeatures)


@pytest.mark.parametrize("deletion_vectors", [True, False])
def test_merged_table_properties_decide_whether_other_readers_open_the_table(spark, tmp_path, deletion_vectors):
    path = str(tmp_path / "table")
    _merge(spark, path, [(k, "a", False) for k in range(1, 6)], deletion_vectors)
    _merge(spark, path, [(2, "B", False), (3, None, True)], deletion_vectors)

    assert ("deletionVectors" in _features(spark, path)) is deletion_vectors
    if deletion_vectors:
        with pytest.raises(Exception, match="deletionVectors"):
            RustDeltaTable(path).to_pyarrow_table()
    else:
        table = RustDeltaTable(path).to_pyarrow_table().sort_by("k")
        assert table.to_pylist() == [{"k": 1, "v": "a"}, {"k": 2, "v": "B"}, {"k": 4, "v": "a"}, {"k": 5, "v": "a"}]


def test_aligning_a_table_with_deletion_vectors_drops_them_and_keeps_its_rows(spark, tmp_path):
    path = str(tmp_path / "table")
    _merge(spark, path, [(k, "a", False) for k in range(1, 6)], deletion_vectors=True)
    _merge(spark, path, [(2, "B", False), (3, None, True)], deletion_vectors=True)

    align_deletion_vectors(spark, path, deletion_vectors=False)

    assert "deletionVectors" not in _features(spark, path)
    rows = sorted(tuple(r.values()) for r in RustDeltaTable(path).to_pyarrow_table().to_pylist())
    assert rows == [(1, "a"), (2, "B"), (4, "a"), (5, "a")]
    align_deletion_vectors(spark, path, deletion_vectors=True)
    assert DeltaTable.forPath(spark, path).detail().first().properties["delta.enableDeletionVectors"] == "true"


def test_losing_the_creation_to_another_writer_merges_into_its_table(spark, tmp_path, caplog):
    """Another writer creates the table while this one builds its source for a table that did not exist: that
    source is not merged (it was built without the other writer's rows); the retry builds it again and merges."""
    path = str(tmp_path / "table")
    seen = []

    def source():
        seen.append(delta.is_delta_table(spark, path))  # as the history source looks for existing rows
        if len(seen) == 1:
            spark.createDataFrame([(1, "other")], "k long, v string").write.format("delta").save(path)
        mine = "mine, after other" if seen[-1] else "mine, blind"
        return spark.createDataFrame([(1, mine, False), (2, "new", False)], "k long, v string, gone boolean")

    assert merge_by_key(spark, path, source, ["k"], "gone", merged_table_properties(False)) == 2

    assert seen == [False, True]
    assert sorted(tuple(r) for r in read_table(spark, path).collect()) == [(1, "mine, after other"), (2, "new")]
    retried = [r for r in caplog.records if r.name == "lakenorm" and r.levelname == "WARNING"]
    assert len(retried) == 1
    assert f"concurrent commit on {path} (attempt 1 of {delta.MAX_ATTEMPTS}), retrying" in retried[0].getMessage()


def test_a_table_whose_creation_has_not_committed_yet_is_no_table_to_align(spark, tmp_path):
    """Another run creating the table has made its `_delta_log` but not written its first commit yet (a
    concurrent run failed on it with delta-rs's `TableNotFoundError`): nothing to align, and no table to open."""
    path = tmp_path / "table"
    (path / "_delta_log").mkdir(parents=True)

    align_deletion_vectors(spark, str(path), deletion_vectors=True)

    assert open_delta_table(str(path), None) is None
    assert not delta.is_delta_table(spark, str(path))


def test_table_version_is_the_newest_commit_also_one_another_writer_made(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.range(2).write.format("delta").save(path)
    assert table_version(spark, path) == 0
    rows = pa.table({"id": pa.array([7, 8], pa.int64())})
    for _ in range(2):  # another writer (delta-rs, outside this JVM and its cached logs)
        write_deltalake(path, rows, mode="append")
    assert table_version(spark, path) == 2
    assert sorted(r.id for r in read_table(spark, path).collect()) == [0, 1, 7, 7, 8, 8]
