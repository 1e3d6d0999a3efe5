"""One catalog for every driver: a Hive Metastore server (the stack's, `deploy.metastore`) backed by PostgreSQL,
read and written at the same time by the engine, a local driver and a job on the standalone cluster."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

from deploy.metastore import metastore
from deploy.metastore_jars import client_settings, ensure_client_jars
from deploy.services import executor_dirs, free_port, postgres, standalone_cluster
from normalization_core.api import load_config
from normalization_core.runtime import engine as engines
from tests.deploy.metastore_drivers import ROLES

REPO = Path(__file__).resolve().parents[2]
SHORT_LIVED_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseParallelGC"


def write_package(landing: Path, source: str, load_id: str, orders: int) -> None:
    folder = landing / load_id
    (folder / "orders").mkdir(parents=True)
    records = [{"id": f"{load_id}-{i}", "total": i, "items": [{"sku": f"s{i}"}, {"sku": "x"}]} for i in range(orders)]
    (folder / "orders/part-0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (folder / "_manifest.json").write_text(json.dumps({
        "load_id": load_id, "created_at": "2024-06-01T00:00:00Z", "source": source, "format": "records",
        "streams": {"orders": {"files": ["orders/part-0.jsonl"]}}}))


def write_config(tmp_path: Path, name: str, spark: dict) -> Path:
    """Sources `shop` and `crm`, each registering its tables in a schema of its name, one warehouse."""
    sources = [{"name": s, "landing": str(tmp_path / "landing" / s), "register": {"schema": s, "snapshot_views": True}}
               for s in ("shop", "crm")]
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"warehouse": str(tmp_path / "warehouse"), "sources": sources, "spark": spark}))
    return path


def run_drivers(configs: dict[str, Path], results: Path, log: Path, engine_dir: Path) -> None:
    """The three drivers started together; each exits once all have read (so all held the catalog at once)."""
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable, "PYTHONPATH": str(REPO),
           engines.ENGINE_DIR_ENV: str(engine_dir)}
    drivers = {}
    for role in ROLES:
        with (log / f"{role}.log").open("w") as out:
            drivers[role] = subprocess.Popen(
                [sys.executable, "-m", "tests.deploy.metastore_drivers", role, str(configs[role]), str(results)],
                cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
    for role, driver in drivers.items():
        driver.wait(timeout=900)
        assert driver.returncode == 0, f"{role}: {(log / f'{role}.log').read_text()[-3000:]}"


@pytest.mark.slow
def test_the_engine_a_local_driver_and_a_cluster_job_share_one_metastore_at_once(tmp_path):
    for source, load_id, orders in (("shop", "L1", 4), ("crm", "C1", 3)):
        write_package(tmp_path / "landing" / source, source, load_id, orders)
    ensure_client_jars()
    results, logs = tmp_path / "results", tmp_path / "logs"
    results.mkdir()
    logs.mkdir()
    pg_folder = Path(tempfile.mkdtemp(prefix="lakenorm-pg-"))  # under /tmp: the server's user must reach it
    with postgres(pg_folder) as pg, metastore(tmp_path / "metastore", pg) as server:
        catalog = {"hive.metastore.uris": server.uri, "spark.sql.warehouse.dir": server.warehouse.as_uri(),
                   **client_settings(),
                   "spark.driver.memory": "1g", "spark.driver.extraJavaOptions": SHORT_LIVED_JVM,
                   "spark.sql.shuffle.partitions": "2"}
        port = free_port()
        engine_config = write_config(tmp_path, "engine", {"master": "local[1]", "remote": f"sc://127.0.0.1:{port}",
                                                          **catalog})
        engine_dir = tmp_path / "engine"
        engines.start(load_config(engine_config).spark, port=port, directory=engine_dir)
        try:
            normalize = subprocess.run([sys.executable, "-m", "lakenorm_app.commands", "--config", str(engine_config),
                                        "normalize", "--source", "shop"], cwd=REPO, capture_output=True, text=True,
                                       env={**os.environ, "PYTHONPATH": str(REPO),
                                            engines.ENGINE_DIR_ENV: str(engine_dir)})
            assert normalize.returncode == 0, normalize.stderr[-3000:]
            cluster = tmp_path / "cluster"
            with standalone_cluster(cluster, workers=1, cores=1, memory="1g") as master:
                configs = {"engine": engine_config,
                           "local": write_config(tmp_path, "local", {"master": "local[1]", **catalog}),
                           "cluster": write_config(tmp_path, "cluster", {
                               "master": master, "spark.executor.memory": "512m",
                               "spark.executor.extraJavaOptions": SHORT_LIVED_JVM, **catalog})}
                run_drivers(configs, results, logs, engine_dir)
                assert executor_dirs(cluster, 0), "the cluster job's executor ran on the worker"
        finally:
            engines.stop(engine_dir)
    read = {role: json.loads((results / f"{role}.json").read_text()) for role in ROLES}
    for role, seen in read.items():  # 4 orders (totals 0..3), 2 items each, the same by name, snapshot and view
        assert (seen["orders"], seen["total"], seen["items"], seen["snapshot"], seen["snapshot_view"]) == \
            (4, 6, 8, 4, 4), role
    assert read["local"]["crm_orders"] == 3  # registered by the engine while the local driver's session was open
    assert read["cluster"]["master"].startswith("spark://") and read["local"]["master"] == "local[1]"
    assert (tmp_path / "metastore" / "warehouse" / "shop.db").is_dir()  # the schema's folder: the metastore's
    assert not (tmp_path / "metastore_db").exists() and not list(tmp_path.rglob("derby.log"))  # no embedded Derby
