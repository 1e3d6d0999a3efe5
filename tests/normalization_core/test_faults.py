"""A normalize process SIGKILLed mid-write: every table is left at its previous or its new
version, the load registry names no half-written load, and running again completes the load with the tables of
an uninterrupted run."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lakenorm_app.commands import main
from lakenorm_app.samples import SampleSpec, write_catalog, write_sample_packages
from tests.normalization_core.table_snapshots import snapshot, write_config

REPO = Path(__file__).parents[2]
# A cold driver of its own: the quick compiler gets it to its first commit sooner (docs/how-to/configuration.md).
CHILD_SPARK = {"master": "local[1]", "spark.driver.memory": "1g", "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1"}


def commits(warehouse: Path) -> set[Path]:
    return set(warehouse.glob("*/*/_delta_log/*.json"))


def normalize_killed_at_first_commit(config: Path, load_id: str, warehouse: Path, timeout: float = 600) -> set[Path]:
    """`lakenorm normalize --load-id` in a process of its own, SIGKILLed (with its JVM) as soon as one new
    Delta commit appears; returns the new commit files."""
    before = commits(warehouse)
    env = {**os.environ, "PYTHONPATH": str(REPO), "SPARK_LOCAL_IP": "127.0.0.1"}
    child = subprocess.Popen([sys.executable, "-m", "lakenorm_app.commands", "--config", str(config), "normalize",
                              "--load-id", load_id], cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + timeout
    try:
        while not commits(warehouse) - before:
            assert child.poll() is None, "the run ended before its first commit"
            assert time.monotonic() < deadline, "no commit within the timeout"
            time.sleep(0.02)
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    return commits(warehouse) - before


@pytest.mark.slow
def test_a_run_killed_mid_write_leaves_every_table_whole_and_a_rerun_completes_it(spark, tmp_path, capsys):
    landing = tmp_path / "landing"
    first, second = write_sample_packages(landing, SampleSpec(packages=2, orders=10, customers=5, events=8))
    source = {"name": "shop", "catalog": str(write_catalog(tmp_path / "catalog.json")), "landing": str(landing)}
    killed = write_config(tmp_path / "killed", "warehouse", source, spark=CHILD_SPARK)
    assert main(["--config", str(killed), "normalize", "--load-id", first]) == 0, capsys.readouterr().err
    previous = snapshot(killed)

    shutil.copytree(tmp_path / "killed" / "warehouse", tmp_path / "whole" / "warehouse")
    whole = write_config(tmp_path / "whole", "warehouse", source)
    assert main(["--config", str(whole), "normalize", "--load-id", second]) == 0, capsys.readouterr().err
    new = snapshot(whole)

    written = normalize_killed_at_first_commit(killed, second, tmp_path / "killed" / "warehouse")
    assert written, "the run was killed after its first commit"
    left = snapshot(killed)
    assert all(left.get(t) in (previous.get(t), new.get(t)) for t in set(previous) | set(new)), \
        [t for t in set(previous) | set(new) if left.get(t) not in (previous.get(t), new.get(t))]
    assert left != new and left != previous, "killed mid-write: some tables at the new version, some not"
    assert left["_norm_loads"] == previous["_norm_loads"], "the registry names no half-written load"

    assert main(["--config", str(killed), "normalize"]) == 0, capsys.readouterr().err  # the pending load again
    assert snapshot(killed) == new
