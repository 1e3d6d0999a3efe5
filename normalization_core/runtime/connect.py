"""Whether a session is a Spark Connect client: such a session has no JVM in this process (no `sparkContext`,
no Py4J gateway), so the classic-only calls of the session start-up modules (`runtime.spark`, `runtime.class_archive`)
are skipped or refused for it. And plans a Spark Connect client can send."""
from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame, SparkSession


def is_connect(spark: SparkSession) -> bool:
    """`spark` is a `pyspark.sql.connect.session.SparkSession` (checked by its class: importing that module
    needs the `connect` extra's packages)."""
    return type(spark).__module__.startswith("pyspark.sql.connect.")


def union_all(frames: Sequence[DataFrame]) -> DataFrame:
    """The frames' rows by column name, as a balanced tree of unions: a Spark Connect plan is one nested protobuf
    message, and a chain of a union per frame (`reduce`) nests it once per frame, past what protobuf parses (100
    levels) with a few dozen loads or files and the pass's own steps on top."""
    level = list(frames)
    while len(level) > 1:
        pairs = [level[i].unionByName(level[i + 1]) for i in range(0, len(level) - 1, 2)]
        level = pairs + level[len(pairs) * 2:]
    return level[0]
