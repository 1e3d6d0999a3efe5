"""A small project for the engine's tests (tests/normalization_core/runtime/test_engine.py): sample packages of one or
more sources, its configuration, `lakenorm` run as a client process of the engine, and every table of a source
as sorted rows."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import yaml
from deltalake import DeltaTable

from lakenorm_app.samples import SampleSpec, write_catalog, write_sample_packages
from normalization_core.configuration.config import load_config
from normalization_core.plans.source_tables import SourceTables

ROOT = Path(__file__).resolve().parents[3]
SOURCE, OTHER, LAKE = "shop", "market", "lake"
VARIANTS = {SOURCE: ("records", {}),
            OTHER: ("airbyte", {"convention": "airbyte", "streams": {"events": {"destination_sync_mode": "overwrite"}}}),
            LAKE: ("records", {"convention": "dlt"})}
"""Per source: its packages' format and settings. Every disposition (append, overwrite, append_dedup with its SCD
history), convention and package format of the sample packages."""
ENGINE_CONF = {"master": "local[2]", "spark.driver.memory": "2g", "spark.sql.shuffle.partitions": "2",
               "spark.driver.extraJavaOptions": "-XX:+UseParallelGC -XX:TieredStopAtLevel=1"}
RUN_TIMES = ("normalized_at", "inserted_at")
"""Suffixes of the columns that say when each run wrote its rows (registry, versions, typed tables under every
convention): two runs' differ."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def write_project(root: Path, spark: dict, sources: Sequence[str] = (SOURCE,)) -> Path:
    """Per source two sample packages (orders: append_dedup with nested line items; events: append, or overwrite;
    customers: append_dedup) in a landing of its own, its `VARIANTS`, the catalog and a configuration; returns the
    configuration file."""
    write_catalog(root / "catalog.json")
    for name in sources:
        spec = SampleSpec(packages=2, orders=40, customers=15, events=50, fmt=VARIANTS[name][0], seed=11, source=name)
        write_sample_packages(root / f"landing_{name}", spec)
    config = {"warehouse": "warehouse", "spark": spark,
              "sources": [{"name": n, "landing": f"landing_{n}", "catalog": "catalog.json", **VARIANTS[n][1]}
                          for n in sources]}
    (root / "lakenorm.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return root / "lakenorm.yaml"


def load_ids(config_file: Path, source: str = SOURCE) -> list[str]:
    return sorted(p.name for p in (config_file.parent / f"landing_{source}").iterdir())


def table_rows(spark, config_file: Path, source: str = SOURCE) -> dict[str, list[str]]:
    """Every table of the source: its rows, sorted, as JSON text (columns in name order, run times left out)."""
    config = load_config(config_file)
    tables = SourceTables(config, config.source(source))
    found = {}
    for table in tables.stored_tables():
        df = spark.read.format("delta").load(tables.path(table))
        df = df.select(*sorted(c for c in df.columns if not c.endswith(RUN_TIMES)))
        found[table] = sorted(json.dumps(row.asDict(recursive=True), sort_keys=True, default=str)
                              for row in df.collect())
    return found


def commits(config_file: Path, source: str = SOURCE) -> dict[str, int]:
    """Each table's number of commits (read with delta-rs)."""
    config = load_config(config_file)
    tables = SourceTables(config, config.source(source))
    return {table: DeltaTable(tables.path(table)).version() + 1 for table in tables.stored_tables()}


def lakenorm(config_file: Path, engine_dir: Path, *args: str) -> subprocess.Popen:
    """`lakenorm --config <file> <args>` in a process (and session) of its own, a client of the engine recorded
    in `engine_dir`; its output piped."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LAKENORM_ENGINE_DIR": str(engine_dir)}
    return subprocess.Popen([sys.executable, "-m", "lakenorm_app.commands", "--config", str(config_file),
                             *args], env=env, cwd=config_file.parent, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def finished(process: subprocess.Popen, timeout: float = 600) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=timeout)
    return process.returncode, out, err


def first_commit(warehouse: Path, process: subprocess.Popen, timeout: float = 600) -> None:
    """Returns once `process` committed to a table of `warehouse` (a Delta log entry newer than the call)."""
    log_files = lambda: set(warehouse.glob("*/*/_delta_log/*.json"))  # noqa: E731
    before, deadline = log_files(), time.monotonic() + timeout
    while not log_files() - before:
        assert process.poll() is None, f"the run ended before its first commit: {process.communicate()}"
        assert time.monotonic() < deadline, "no commit within the timeout"
        time.sleep(0.02)


def kill_at_first_commit(config_file: Path, engine_pid: int, client: subprocess.Popen, timeout: float = 600) -> None:
    """SIGKILL the engine's process group (the server JVM and its Python workers) as soon as the client's run
    committed to one table of the warehouse."""
    first_commit(config_file.parent / "warehouse", client, timeout)
    os.killpg(engine_pid, signal.SIGKILL)
    try:
        os.waitpid(engine_pid, 0)  # (the server is this process's child when this process started it)
    except ChildProcessError:
        pass
