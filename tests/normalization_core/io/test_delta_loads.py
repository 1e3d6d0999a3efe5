"""A load's rows: appended when the table's log shows it holds none of them (one Spark job), else replaced; two runs
appending one load at once still leave it once."""
from __future__ import annotations

import threading

from delta.tables import DeltaTable

from normalization_core.io import load_writes
from normalization_core.io.delta import read_table
from normalization_core.io.load_writes import load_rows_in_log, replace_loads


def _rows(spark, load_id, values):
    return spark.createDataFrame([(load_id, v) for v in values], "load string, v long")


def _table(spark, path):
    return sorted(tuple(r) for r in read_table(spark, path).collect())


def _operations(spark, path):
    return [r.operation for r in DeltaTable.forPath(spark, path).history().orderBy("version").collect()]


def test_a_new_load_is_appended_and_a_load_held_already_is_replaced(spark, tmp_path):
    path = str(tmp_path / "table")
    replace_loads(_rows(spark, "L1", [1, 2]), path, "load", ["L1"])
    replace_loads(_rows(spark, "L2", [3]), path, "load", ["L2"])
    assert load_rows_in_log(path, "load", "L2") == (1, False)
    assert load_rows_in_log(path, "load", "L3") == (0, False)

    replace_loads(_rows(spark, "L1", [10]), path, "load", ["L1"])  # again, other rows: replaced
    replace_loads(_rows(spark, "L2", [3]), path, "load", ["L2"])  # again, the same rows: still once

    assert _table(spark, path) == [("L1", 10), ("L2", 3)]
    assert _operations(spark, path) == ["WRITE", "WRITE", "WRITE", "WRITE"]
    modes = [r.operationParameters["mode"] for r in DeltaTable.forPath(spark, path).history().orderBy("version").collect()]
    assert modes == ["ErrorIfExists", "Append", "Overwrite", "Overwrite"]


def test_a_load_a_file_of_several_loads_may_hold_is_replaced_not_appended(spark, tmp_path):
    """A pass of several loads writes files holding more than one load (statistics L1..L3): L2 may be in them."""
    path = str(tmp_path / "table")
    replace_loads(spark.createDataFrame([("L1", 1), ("L3", 3)], "load string, v long").coalesce(1), path, "load",
                  ["L1", "L3"])
    assert load_rows_in_log(path, "load", "L2") == (0, True)

    replace_loads(_rows(spark, "L2", [2]), path, "load", ["L2"])

    assert _table(spark, path) == [("L1", 1), ("L2", 2), ("L3", 3)]
    assert DeltaTable.forPath(spark, path).history(1).first().operationParameters["mode"] == "Overwrite"


def test_two_runs_appending_one_load_at_once_leave_it_once(spark, tmp_path, monkeypatch, caplog):
    """Both runs find the load absent before either appends; the second to look afterwards finds it twice and
    replaces its rows."""
    path = str(tmp_path / "table")
    replace_loads(_rows(spark, "L0", [0]), path, "load", ["L0"])
    checked, both_checked = [], threading.Barrier(2)
    real_check = load_writes.load_rows_in_log

    def check_then_wait(*args, **kwargs):
        found = real_check(*args, **kwargs)
        if len(checked) < 2 and found == (0, False):
            checked.append(found)
            both_checked.wait(timeout=60)  # each run appends only after both found the load absent
        return found

    monkeypatch.setattr(load_writes, "load_rows_in_log", check_then_wait)
    failed = []

    def run() -> None:
        try:
            replace_loads(_rows(spark, "L1", [1, 2]), path, "load", ["L1"])
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            failed.append(exc)

    runs = [threading.Thread(target=run) for _ in range(2)]
    for thread in runs:
        thread.start()
    for thread in runs:
        thread.join()

    assert not failed

    assert _table(spark, path) == [("L0", 0), ("L1", 1), ("L1", 2)]
    assert _operations(spark, path)[1:3] == ["WRITE", "WRITE"]  # both appended
    assert any("is in" in r.getMessage() and "more than once" in r.getMessage() for r in caplog.records)
