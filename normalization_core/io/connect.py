"""Whether a session is a Spark Connect client: such a session has no JVM in this process (no `sparkContext`,
no Py4J gateway), so the classic-only calls of the session start-up modules (`io.spark`, `io.class_archive`)
are skipped or refused for it."""
from __future__ import annotations

from pyspark.sql import SparkSession


def is_connect(spark: SparkSession) -> bool:
    """`spark` is a `pyspark.sql.connect.session.SparkSession` (checked by its class: importing that module
    needs the `connect` extra's packages)."""
    return type(spark).__module__.startswith("pyspark.sql.connect.")
