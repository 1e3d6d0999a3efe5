"""Plans a Spark Connect client sends: a pass's many loads (or a package's many files) put together stay within what
protobuf parses, with the pass's own steps on top."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from normalization_core.runtime.engine import ENGINE_DIR_ENV

CLIENT = """
import sys
from pyspark.sql import functions as F
from normalization_core.runtime.connect import union_all
from normalization_core.runtime.spark import build_spark_session
spark = build_spark_session({"master": "local[2]", "remote": sys.argv[1]})
frames = []
for i in range(40):  # a load's lines, each with a few steps of its own
    frame = spark.range(2).withColumn("load", F.lit(i))
    for j in range(6):
        frame = frame.withColumn(f"c{j}", F.col("id") + j).select("*")
    frames.append(frame)
union = union_all(frames)
deep = union
for j in range(20):  # the pass's steps after the union
    deep = deep.withColumn(f"x{j}", F.lit(j))
print(deep.localCheckpoint(eager=True).count(), [r.load for r in union.select("load").collect()][::2])
"""


@pytest.mark.slow
def test_forty_frames_union_into_one_plan_the_engine_takes_in_their_order(shared_engine):
    """A chain of a union per frame nests the plan once per frame: protobuf then refuses it (`DecodeError: Error
    parsing message with type 'spark.connect.Relation'`, seen with 20 loads in one pass)."""
    client = subprocess.run([sys.executable, "-c", CLIENT, shared_engine.address], capture_output=True, text=True,
                            timeout=600, env={**os.environ, "PYTHONPATH": str(Path.cwd()),
                                              ENGINE_DIR_ENV: str(shared_engine.directory)})
    assert client.returncode == 0, client.stderr[-3000:]
    assert client.stdout.strip().splitlines()[-1] == f"80 {list(range(40))}"
