"""One step beyond one machine (issue 17): `lakenorm normalize` with `spark.master` = a Spark standalone master
and two workers on loopback (pyspark's own launcher), landing and warehouse in moto's loopback S3 server:
the tables equal a `local[2]` run row for row."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from normalization_core.io.jars import ensure_s3_jars
from tests.normalization_core.table_snapshots import SAMPLE_TABLES, assert_same_tables, normalize, sample_shop, write_config
from tests.spark_standalone import standalone_cluster

REPO = Path(__file__).parents[2]


@pytest.mark.slow
def test_a_standalone_cluster_writing_to_a_bucket_equals_a_local_run(spark, tmp_path, s3_bucket, capsys):
    local, source = sample_shop(tmp_path, s3_bucket)
    normalize(local, capsys)  # local[2], this process's session

    s3a_jars = ":".join(ensure_s3_jars())  # the workers share this machine's jar cache: nothing is shipped
    with standalone_cluster(tmp_path / "cluster", workers=2, cores=1, memory="1g") as master:
        remote = write_config(tmp_path / "remote", s3_bucket.uri("warehouse"),
                              {**source, "landing": s3_bucket.uri("landing/shop")}, s3_bucket.endpoint,
                              spark={"master": master, "spark.driver.extraClassPath": s3a_jars,
                                     "spark.executor.extraClassPath": s3a_jars, "spark.executor.memory": "512m",
                                     "spark.sql.shuffle.partitions": "4"})
        env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
               "PYTHONPATH": str(REPO)}
        done = subprocess.run([sys.executable, "-m", "normalization_core.cli", "--config", str(remote), "normalize"],
                              cwd=REPO, env=env, capture_output=True, text=True, timeout=1200)
        assert done.returncode == 0, done.stderr[-3000:]
        assert "shop" in done.stdout and "rows" in done.stdout
    executors = [list((tmp_path / "cluster" / f"worker-{i}").glob("app-*/*")) for i in range(2)]
    assert all(executors), "each worker ran an executor of the run"
    assert_same_tables(local, remote, SAMPLE_TABLES)
