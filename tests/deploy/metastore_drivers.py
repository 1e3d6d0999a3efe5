"""One driver of `test_metastore.py`, a process of its own: `python -m tests.deploy.metastore_drivers ROLE CONFIG
FOLDER`. Each reads `shop.orders` by name from the Hive Metastore server its configuration names, writes what it
read to `FOLDER/<ROLE>.json`, and keeps its session open until every driver has written (they all hold the
metastore at once).

- `engine`: a client of the Spark Connect engine; first normalizes source `crm`, whose tables `register:` puts in
  the metastore while the other drivers run.
- `local`: a local driver of its own; also waits for `crm.orders`, registered by the engine meanwhile.
- `cluster`: a driver whose job runs on the standalone cluster's executors.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from normalization_core.api import load_config, normalize_loads, read_snapshot
from normalization_core.runtime.spark import build_spark_session

ROLES = ("engine", "local", "cluster")
WAIT_S = 600


def wait_for(found, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not found():
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {what} after {WAIT_S} s")
        time.sleep(1)


def main(role: str, config_file: str, folder: str) -> None:
    config = load_config(config_file)
    spark = build_spark_session(config.spark, app_name=f"metastore-{role}")
    if role == "engine":
        normalize_loads(spark, config, "crm", ["C1"])
    row = spark.sql("SELECT count(*) AS orders, sum(total) AS total FROM shop.orders").first()
    read = {"orders": row["orders"], "total": row["total"],
            "items": spark.table("shop.orders__items").count(),
            "snapshot": read_snapshot(spark, config, "shop", "orders").count(),
            "snapshot_view": spark.table("shop_snapshot.orders").count(),
            "master": "engine" if role == "engine" else spark.conf.get("spark.master")}
    if role == "local":
        wait_for(lambda: spark.catalog.tableExists("crm.orders"), "crm.orders in the catalog")
        read["crm_orders"] = spark.table("crm.orders").count()
    results = Path(folder)
    (results / f"{role}.json").write_text(json.dumps(read))
    wait_for(lambda: all((results / f"{r}.json").is_file() for r in ROLES), "result of every driver")
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:4])
