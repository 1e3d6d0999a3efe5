"""The local engine (`lakenorm engine start | status | stop`, io/engine.py) and sessions that are its Spark Connect
clients (`spark: {remote: sc://host:port}`): a real server, a real load through it, the same tables as a load
through the classic local session.

pyspark builds a process's columns (`pyspark.sql.functions`) either for classic Spark or for Spark Connect, per
process: the Connect client runs in a process of its own (as the CLI or a Dagster run would), beside the test
process's classic session.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from deltalake import DeltaTable

from lakenorm_app.samples import SampleSpec, write_catalog, write_sample_packages
from normalization_core.configuration.config import load_config
from normalization_core.errors import LakenormError
from normalization_core.io import engine
from normalization_core.io.spark import build_spark_session, remote_address
from normalization_core.passes.normalize import normalize_loads
from normalization_core.plans.source_tables import SourceTables

ROOT = Path(__file__).resolve().parents[3]
SOURCE = "shop"
ENGINE_CONF = {"master": "local[2]", "spark.driver.memory": "2g", "spark.sql.shuffle.partitions": "2",
               "spark.driver.extraJavaOptions": "-XX:+UseParallelGC"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_remote_addresses():
    assert remote_address("sc://127.0.0.1:15010") == ("127.0.0.1", 15010)
    assert remote_address("sc://engine") == ("engine", 15002)
    assert remote_address("sc://engine:443/;token=abc;use_ssl=true") == ("engine", 443)


def test_a_client_whose_engine_is_down_gets_one_line_naming_the_address_and_the_command():
    remote = f"sc://127.0.0.1:{free_port()}"
    with pytest.raises(LakenormError) as err:
        build_spark_session({"master": "local[2]", "remote": remote})
    message = str(err.value)
    assert remote in message and "lakenorm engine start" in message and "\n" not in message


def test_status_and_stop_without_an_engine(tmp_path):
    assert engine.status(tmp_path).state == "stopped"
    assert engine.status(tmp_path).text() == "engine: not running"
    assert engine.stop(tmp_path) is None


def test_the_server_gets_lakenorms_driver_settings_and_connects_binding(tmp_path):
    conf = engine.server_conf({**ENGINE_CONF, "remote": "sc://127.0.0.1:15010"}, "127.0.0.1", 15010)
    assert conf["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"
    assert conf["spark.sql.session.timeZone"] == "UTC" and conf["spark.driver.memory"] == "2g"
    assert conf["spark.connect.grpc.binding.port"] == "15010" and "delta-spark" in conf["spark.jars"]
    command = engine.server_command(conf)
    assert command[command.index("--class") + 1] == engine.CONNECT_SERVER_CLASS
    assert "remote" not in " ".join(command)


@pytest.fixture(scope="module")
def running_engine(tmp_path_factory):
    """One real Spark Connect server for the module, on a free loopback port, stopped afterwards."""
    directory = tmp_path_factory.mktemp("engine")
    started = engine.start(ENGINE_CONF, port=free_port(), directory=directory)
    try:
        yield started, directory
    finally:
        engine.stop(directory)
        assert engine.status(directory).state == "stopped"


def write_project(root: Path, spark: dict) -> Path:
    """Two sample packages (orders: append_dedup with nested line items; events: append; customers:
    append_dedup), the catalog and a configuration; returns the configuration file."""
    spec = SampleSpec(packages=2, orders=40, customers=15, events=50, fmt="records", seed=11)
    write_sample_packages(root / "landing", spec)
    write_catalog(root / "catalog.json")
    config = {"warehouse": "warehouse", "spark": spark,
              "sources": [{"name": SOURCE, "landing": "landing", "catalog": "catalog.json"}]}
    (root / "lakenorm.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return root / "lakenorm.yaml"


CLIENT = """
import json, sys
from normalization_core.configuration.config import load_config
from normalization_core.io.connect import is_connect
from normalization_core.io.spark import build_spark_session
from normalization_core.passes.normalize import normalize_loads

config = load_config(sys.argv[1])
spark = build_spark_session(config.spark)
assert is_connect(spark), type(spark)
results = normalize_loads(spark, config, sys.argv[2], sys.argv[3:])
print(json.dumps([{s: r.typed_rows for s, r in result.streams.items()} for result in results]))
spark.stop()
"""


def summaries(results) -> list[dict]:
    return [{s: r.typed_rows for s, r in result.streams.items()} for result in results]


RUN_TIMES = {"normalized_at", "inserted_at", "_norm_normalized_at"}
"""When each run wrote its rows (registry, versions, typed tables): the two runs' differ."""


def table_rows(spark, config) -> dict[str, list[str]]:
    """Every table of the source: its rows, sorted, as JSON text (columns in name order, run times left out)."""
    tables = SourceTables(config, config.source(SOURCE))
    found = {}
    for table in tables.stored_tables():
        df = spark.read.format("delta").load(tables.path(table))
        df = df.select(*sorted(c for c in df.columns if c not in RUN_TIMES))
        found[table] = sorted(json.dumps(row.asDict(recursive=True), sort_keys=True, default=str)
                              for row in df.collect())
    return found


@pytest.mark.slow
def test_a_load_through_the_engine_writes_the_tables_the_classic_session_writes(running_engine, spark, tmp_path):
    started, directory = running_engine
    assert engine.status(directory).state == "running" and started.address.startswith("sc://127.0.0.1:")
    remote_file = write_project(tmp_path / "remote", {"master": "local[2]", "remote": started.address})
    classic_file = write_project(tmp_path / "classic", {"master": "local[2]"})
    load_ids = sorted(p.name for p in (tmp_path / "remote" / "landing").iterdir())
    assert len(load_ids) == 2

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    client = subprocess.run([sys.executable, "-c", CLIENT, str(remote_file), SOURCE, *load_ids], env=env,
                            capture_output=True, text=True, timeout=600)
    assert client.returncode == 0, client.stderr[-3000:]
    remote_results = json.loads(client.stdout.strip().splitlines()[-1])

    classic_config = load_config(classic_file)
    classic_results = summaries(normalize_loads(spark, classic_config, SOURCE, load_ids))
    # the counts of each load's typed and child tables (Observation on the Delta writes) arrive over Connect
    assert remote_results == classic_results
    assert {"orders", "events", "customers"} <= set(remote_results[0])

    remote_tables = table_rows(spark, load_config(remote_file))
    classic_tables = table_rows(spark, classic_config)
    assert sorted(remote_tables) == sorted(classic_tables)
    assert any("line_items" in t for t in remote_tables)  # the nested array's child table
    unreadable = {}
    for table in remote_tables:  # delta-rs (the ledger's and the sensor's reader, and other engines') reads them
        try:
            DeltaTable(SourceTables(load_config(remote_file), load_config(remote_file).source(SOURCE)).path(table))
        except Exception as err:  # noqa: BLE001
            unreadable[table] = str(err).splitlines()[0]
    assert unreadable == {}
    different = [t for t in classic_tables if remote_tables[t] != classic_tables[t]]
    assert different == [], {t: (remote_tables[t][:2], classic_tables[t][:2]) for t in different}
