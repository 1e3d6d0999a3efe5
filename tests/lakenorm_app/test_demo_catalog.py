"""After `lakenorm demo`, a fresh session on the same metastore reads the demo's tables by name (issue 38)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from normalization_core.io.delta import read_table

READER = """
import json, sys
from normalization_core.api import build_spark_session, load_config
spark = build_spark_session(load_config(sys.argv[1]).spark)
print(json.dumps({"catalog": spark.conf.get("spark.sql.catalogImplementation"),
                  "orders": spark.table("shop.orders").count(),
                  "snapshot": spark.table("shop_snapshot.orders").count(),
                  "children": spark.table("shop.`orders__line_items`").count()}))
"""


@pytest.mark.slow
def test_a_fresh_session_reads_the_demo_tables_by_name_from_the_embedded_metastore(spark, tmp_path):
    root, workdir = tmp_path / "demo", tmp_path / "workdir"
    workdir.mkdir()
    env = {**os.environ, "PYTHONPATH": str(Path.cwd())}
    demo = subprocess.run([sys.executable, "-m", "lakenorm_app.cli", "demo", "--root", str(root), "--packages", "1"],
                          env=env, cwd=workdir, capture_output=True, text=True, timeout=600)
    assert demo.returncode == 0, demo.stderr[-3000:]
    # the metastore and Derby's log live under the demo's root, nothing lands in the working directory
    assert (root / "metastore/metastore_db").is_dir() and (root / "metastore/derby.log").exists()
    assert list(workdir.iterdir()) == []
    read = subprocess.run([sys.executable, "-c", READER, str(root / "lakenorm.yaml")], env=env, capture_output=True,
                          text=True, timeout=600)  # a new process: a new driver, the same metastore
    assert read.returncode == 0, read.stderr[-3000:]
    found = json.loads(read.stdout.strip().splitlines()[-1])
    orders = read_table(spark, str(root / "warehouse/shop/orders")).count()
    children = read_table(spark, str(root / "warehouse/shop/orders__line_items")).count()
    assert found == {"catalog": "hive", "orders": orders, "snapshot": orders, "children": children} and orders > 0
