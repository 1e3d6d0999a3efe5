"""One step beyond one machine: `lakenorm normalize` with `spark.master` = a Spark standalone master
and two workers on loopback (pyspark's own launcher), landing and warehouse in moto's loopback S3 server:
the tables equal a `local[2]` run row for row, also though one worker's executor is SIGKILLed mid-job
(Spark retries its tasks on a new executor). A `local[2]` run on the bucket afterwards finds the load
registry there, normalizes nothing and writes nothing (manifest packages in a bucket, SPEC §2.3)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from deploy.services import executor_dirs, standalone_cluster
from normalization_core.runtime.jars import ensure_s3_jars
from tests.normalization_core.table_snapshots import (
    SAMPLE_TABLES,
    assert_same_tables,
    normalize,
    sample_shop,
    write_config,
)

REPO = Path(__file__).parents[2]
SHORT_LIVED_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseParallelGC"


def kill_first_executor_mid_task(cluster: Path, driver: subprocess.Popen, timeout: float = 600) -> int | None:
    """SIGKILL worker 0's executor once it logs its first task; its pid, or None if the driver ended first."""
    deadline = time.monotonic() + timeout
    while driver.poll() is None and time.monotonic() < deadline:
        for executor in executor_dirs(cluster, 0):
            if "Running task" in ((executor / "stderr").read_text(errors="replace")
                                  if (executor / "stderr").is_file() else ""):
                pid = process_in(executor)
                if pid is not None:
                    os.kill(pid, signal.SIGKILL)
                    return pid
        time.sleep(0.1)
    return None


def process_in(folder: Path) -> int | None:
    """The executor JVM working in `folder` (the worker starts each executor in its own folder)."""
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if Path(os.readlink(proc / "cwd")) == folder and b"Executor" in (proc / "cmdline").read_bytes():
                return int(proc.name)
        except OSError:
            continue
    return None


@pytest.mark.slow
def test_a_standalone_cluster_writing_to_a_bucket_equals_a_local_run(spark, tmp_path, s3_bucket, capsys):
    local, source = sample_shop(tmp_path, s3_bucket)
    normalize(local, capsys)  # local[2], this process's session

    s3a_jars = ":".join(ensure_s3_jars())  # the workers share this machine's jar cache: nothing is shipped
    cluster = tmp_path / "cluster"
    with standalone_cluster(cluster, workers=2, cores=1, memory="1g") as master:
        remote = write_config(tmp_path / "remote", s3_bucket.uri("warehouse"),
                              {**source, "landing": s3_bucket.uri("landing/shop")}, s3_bucket.endpoint,
                              spark={"master": master, "spark.driver.extraClassPath": s3a_jars,
                                     "spark.executor.extraClassPath": s3a_jars, "spark.executor.memory": "512m",
                                     # short-lived JVMs on two shared cores: the quick compiler and the
                                     # throughput collector cost less CPU
                                     "spark.driver.extraJavaOptions": SHORT_LIVED_JVM,
                                     "spark.executor.extraJavaOptions": SHORT_LIVED_JVM,
                                     "spark.sql.shuffle.partitions": "4"})
        env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
               "PYTHONPATH": str(REPO)}
        with (tmp_path / "driver.out").open("w") as out, (tmp_path / "driver.err").open("w") as err:
            driver = subprocess.Popen([sys.executable, "-m", "lakenorm_app.commands", "--config", str(remote),
                                       "normalize"], cwd=REPO, env=env, stdout=out, stderr=err)
            killed = kill_first_executor_mid_task(cluster, driver)
            driver.wait(timeout=1200)
        out, err = (tmp_path / "driver.out").read_text(), (tmp_path / "driver.err").read_text()
        assert driver.returncode == 0, err[-3000:]
        assert "shop" in out and "rows" in out
    assert killed is not None, "worker 0's executor was killed while the job ran"
    assert "Lost executor" in err, "the driver saw the executor go and ran its tasks again"
    assert len(executor_dirs(cluster, 0)) >= 2 and executor_dirs(cluster, 1), \
        "worker 0 started a new executor after the kill; each worker ran an executor of the run"
    assert_same_tables(local, remote, SAMPLE_TABLES)
    again = write_config(tmp_path / "again", s3_bucket.uri("warehouse"),
                         {**source, "landing": s3_bucket.uri("landing/shop")}, s3_bucket.endpoint)
    before = s3_bucket.objects("warehouse/")
    assert "nothing to normalize" in normalize(again, capsys)
    assert s3_bucket.objects("warehouse/") == before  # not one object written
