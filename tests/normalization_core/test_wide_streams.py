"""Wide and deep streams through `lakenorm normalize --load-id` in a process of its own, started as
lakenorm starts it for a small input (the quick compiler: larger frames, so a smaller stack for deep expressions):
a generated stream of 1,000 columns nested 8 deep, and 100 real GitHub events (hundreds of columns, 7 tables,
nesting 5 deep) under `dlt` without a catalog, equal to real dlt's tables on the same records."""
from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from normalization_core.configuration.config import LakenormConfig, load_config
from normalization_core.io.delta import read_table
from normalization_core.passes.pending import loads_input_bytes
from normalization_core.runtime.spark import QUICK_START_JAVA_OPTIONS, session_conf
from tests.normalization_core.dlt_peer import run_dlt, table_differences, write_package
from tests.normalization_core.table_snapshots import write_config
from tests.normalization_core.wide_records import deep_paths, deep_record, github_events

pytest.importorskip("dlt")
REPO = Path(__file__).parents[2]
LOAD_ID = "1700000000.1"
DEEP_RECORDS = 20
# lakenorm's own JVM settings (no `Tiered` option, so the small-input start applies; the default 8g heap: a 2g
# driver spent most of its time collecting garbage while analyzing the wide plans).
CHILD_SPARK = {"master": "local[2]"}


def wide_streams() -> dict[str, list[dict]]:
    return {"deep": [deep_record(i) for i in range(DEEP_RECORDS)], "events": github_events()}


@dataclass
class WideRun:
    config: LakenormConfig
    process: subprocess.CompletedProcess
    peer: dict
    spark: SparkSession

    def table(self, name: str):
        return read_table(self.spark, self.config.table_path("wide", name))


@pytest.fixture(scope="module")
def wide(spark, tmp_path_factory) -> WideRun:
    work = tmp_path_factory.mktemp("wide")
    records = wide_streams()
    (work / "landing").mkdir()
    config_file = write_config(work, "warehouse", {"name": "wide", "landing": "landing", "convention": "dlt"},
                               spark=CHILD_SPARK)
    config = load_config(config_file)
    write_package(config.source("wide").landing, LOAD_ID, "2023-11-14T22:13:20Z", records, source="wide")
    env = {**os.environ, "PYTHONPATH": str(REPO), "SPARK_LOCAL_IP": "127.0.0.1"}
    process = subprocess.run([sys.executable, "-m", "lakenorm_app.commands", "--config", str(config_file),
                              "normalize", "--load-id", LOAD_ID], cwd=REPO, env=env, capture_output=True, text=True,
                             timeout=1800)
    return WideRun(config, process, run_dlt(work / "dlt", [records]), spark)


@pytest.mark.slow
def test_the_process_starts_as_for_a_small_input_and_succeeds(wide):
    size = loads_input_bytes(wide.config, "wide", [LOAD_ID])
    assert size is not None and QUICK_START_JAVA_OPTIONS in session_conf(
        wide.config.spark, size)["spark.driver.extraJavaOptions"]
    assert wide.process.returncode == 0, wide.process.stderr[-3000:]
    printed = {line.split()[2]: line for line in wide.process.stdout.splitlines()}
    assert "0 rejected" in printed["_dlt_raw_deep"] and "0 rejected" in printed["_dlt_raw_events"]


@pytest.mark.slow
def test_a_thousand_columns_nested_eight_deep_are_one_wide_root_table(wide):
    deep = wide.table("deep")
    data = [c for c in deep.columns if not c.startswith("_dlt_")]
    assert sorted(data) == sorted(deep_paths()) and len(data) == 1001
    types = dict(deep.dtypes)
    assert (types["n0__n1__n2__n3__n4__n5__n6__k7_0"], types["n0__k1_1"], types["k0_2"]) == (
        "bigint", "string", "boolean")
    rows = {r["id"]: r for r in deep.select("id", "n0__n1__n2__n3__n4__n5__n6__k7_1", "k0_0", "_dlt_load_id")
            .collect()}  # twenty test rows
    assert sorted(rows) == list(range(DEEP_RECORDS))
    assert rows[3]["n0__n1__n2__n3__n4__n5__n6__k7_1"] == "s3_1" and rows[3]["k0_0"] == 21
    assert {r["_dlt_load_id"] for r in rows.values()} == {LOAD_ID}


@pytest.mark.slow
def test_wide_streams_equal_real_dlts_tables_columns_types_and_values(wide):
    names = sorted(t for t in wide.peer if not t.startswith("_dlt"))
    assert len([t for t in names if t.startswith("events")]) == 7
    assert table_differences(wide.peer, names, wide.table) == {}
