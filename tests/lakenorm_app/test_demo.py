"""`lakenorm demo`: sample packages through the sensor and its run into a persistent local instance, the run a client
of a local engine the demo starts and stops; a fresh session on the same metastore reads the demo's tables by name."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from lakenorm_app.cli import main
from normalization_core.api import engine, load_config
from normalization_core.io.delta import read_table
from normalization_core.runtime.engine_runs import runs_served
from pipeline_assets.sensors import RANGE_END, RANGE_START

READER = """
import json, sys
from normalization_core.api import build_spark_session, load_config
local = {k: v for k, v in load_config(sys.argv[1]).spark.items() if k != "remote"}  # a driver of its own
spark = build_spark_session(local, input_bytes=0)  # a few counts: a short-lived JVM
print(json.dumps({"catalog": spark.conf.get("spark.sql.catalogImplementation"),
                  "orders": spark.table("shop.orders").count(),
                  "snapshot": spark.table("shop_snapshot.orders").count(),
                  "children": spark.table("shop.`orders__line_items`").count()}))
"""


@pytest.mark.slow
def test_demo_leaves_tables_an_instance_showing_the_partitions_and_a_metastore_naming_the_tables(
        spark, tmp_path, monkeypatch, capsys):
    root, workdir = tmp_path / "demo", tmp_path / "workdir"
    workdir.mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "elsewhere"))
    env = {**os.environ, "PYTHONPATH": str(Path.cwd())}
    demo = subprocess.run([sys.executable, "-m", "lakenorm_app.cli", "demo", "--root", str(root), "--packages", "2"],
                          env=env, cwd=workdir, capture_output=True, text=True, timeout=900)
    assert demo.returncode == 0, demo.stderr[-3000:]
    out = demo.stdout
    assert out.count(": success") == 1  # one run over both loads
    for table, rows in (("_norm_raw_orders", 2000), ("_norm_raw_customers", 400), ("_norm_raw_events", 4000)):
        assert read_table(spark, str(root / "warehouse/shop" / table)).count() == rows
        assert f"shop.{table}" in out
    assert (root / "dagster_home/dagster.yaml").read_text() == open("dagster.yaml").read()
    # the metastore and Derby's log live under the demo's root, nothing lands in the working directory
    assert (root / "metastore/metastore_db").is_dir() and (root / "metastore/derby.log").exists()
    assert list(workdir.iterdir()) == []
    remote = load_config(root / "lakenorm.yaml").spark["remote"]  # the run was a client of the demo's engine
    assert remote.startswith("sc://127.0.0.1:") and runs_served(root / "engine") == 1
    assert engine.status(root / "engine").state == "stopped"  # started for the run, stopped at the end

    instance = dg.DagsterInstance.from_config(str(root / "dagster_home"))
    load_ids = instance.get_dynamic_partitions("shop_load_ids")
    assert len(load_ids) == 2
    (run,) = instance.get_runs(dg.RunsFilter(job_name="shop_normalize"))
    assert (run.tags[RANGE_START], run.tags[RANGE_END]) == tuple(load_ids)
    for key in ("_norm_raw_orders", "_norm_raw_customers", "_norm_raw_events"):
        materialized = instance.get_materialized_partitions(dg.AssetKey(["shop", key]))
        assert materialized == set(load_ids)
    for table, rows in (("_norm_loads", 6), ("_norm_versions", 3)):  # observed after the runs, as the UI shows
        observed = instance.fetch_observations(dg.AssetKey(["shop", table]), limit=1).records
        assert observed and observed[0].asset_observation.metadata["dagster/row_count"].value == rows, table

    read = subprocess.run([sys.executable, "-c", READER, str(root / "lakenorm.yaml")], env=env, capture_output=True,
                          text=True, timeout=600)  # a new process: a new driver, the same metastore
    assert read.returncode == 0, read.stderr[-3000:]
    found = json.loads(read.stdout.strip().splitlines()[-1])
    orders = read_table(spark, str(root / "warehouse/shop/orders")).count()
    children = read_table(spark, str(root / "warehouse/shop/orders__line_items")).count()
    assert found == {"catalog": "hive", "orders": orders, "snapshot": orders, "children": children} and orders > 0

    assert main(["demo", "--root", str(root), "--packages", "2"]) == 0  # again: nothing new
    assert "no new load packages" in capsys.readouterr().out


def test_land_only_adds_just_the_missing_packages_and_runs_nothing(tmp_path, capsys):
    root = tmp_path / "demo"
    assert main(["demo", "--root", str(root), "--packages", "2", "--land-only"]) == 0
    landing = root / "landing/shop"
    first = files(landing)
    assert main(["demo", "--root", str(root), "--packages", "3", "--land-only"]) == 0
    assert "landed 1 new package(s)" in capsys.readouterr().out
    assert len([p for p in landing.iterdir()]) == 3 and not list(landing.parent.glob(".staging-*"))
    assert {path: mtime for path, mtime in files(landing).items() if path in first} == first  # untouched
    assert not (root / "dagster_home").exists() and not (root / "warehouse").exists()


def files(folder) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}
