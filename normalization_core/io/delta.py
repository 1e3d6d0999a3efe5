"""Delta writes: atomic per table, idempotent per load ID, retried on concurrent commits."""
from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from delta.exceptions import DeltaConcurrentModificationException
from delta.tables import DeltaTable
from pyspark import StorageLevel
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

T = TypeVar("T")
MERGED_TABLE_PROPERTIES = {"delta.enableDeletionVectors": "true"}
"""Tables updated by MERGE: a MERGE that touches a few rows of many files marks them deleted instead of
rewriting those files."""
MAX_ATTEMPTS = 8
_RACE_MARKERS = ("DELTA_CONCURRENT", "DELTA_PROTOCOL_CHANGED", "DELTA_METADATA_CHANGED",
                 "ConcurrentAppendException", "ProtocolChangedException", "FileAlreadyExistsException")


def with_conflict_retry(action: Callable[[], T], attempts: int = MAX_ATTEMPTS) -> T:
    """Run a Delta commit, again after a losing optimistic-concurrency race.

    Every action passed here is idempotent (replace a load's rows, MERGE by key), so running it
    again after another writer committed first gives the same table as running it once.
    """
    for attempt in range(1, attempts + 1):
        try:
            return action()
        except Exception as exc:  # noqa: BLE001 - Delta's races arrive as several exception types
            if attempt == attempts or not _is_race(exc):
                raise
            time.sleep(min(2.0, 0.05 * 2 ** attempt) * (1 + random.random()))
    raise AssertionError("unreachable")


def _is_race(exc: Exception) -> bool:
    if isinstance(exc, DeltaConcurrentModificationException):
        return True
    return any(marker in str(exc) for marker in _RACE_MARKERS)


def is_delta_table(spark: SparkSession, path: str) -> bool:
    try:
        return DeltaTable.isDeltaTable(spark, path)
    except AnalysisException:
        return False


def replace_load(df: DataFrame, path: str, load_column: str, load_id: str) -> None:
    """Replace exactly the rows of `load_id` in the table at `path` with `df`, in one commit."""
    replace_loads(df, path, load_column, [load_id])


def replace_loads(df: DataFrame, path: str, load_column: str, load_ids: Sequence[str]) -> None:
    """Replace exactly the rows of `load_ids` in the table at `path` with `df`, in one commit.

    Load IDs are validated against `^[A-Za-z0-9][A-Za-z0-9._-]*$`, so the predicate is safe.
    """
    listed = ", ".join(f"'{load_id}'" for load_id in load_ids)
    predicate = f"`{load_column}` IN ({listed})"
    with_conflict_retry(lambda: (
        df.write.format("delta").mode("overwrite").option("replaceWhere", predicate)
        .option("mergeSchema", "true").save(path)))


def rows_per_load(spark: SparkSession, path: str, load_column: str, load_ids: Sequence[str]) -> dict[str, int]:
    """Rows the table holds now for each of `load_ids` (one counter per load reaches the driver)."""
    counts = (read_table(spark, path).where(F.col(load_column).isin(list(load_ids)))
              .groupBy(load_column).count().collect())  # one counter per load ID: metadata
    found = {row[0]: int(row[1]) for row in counts}
    return {load_id: found.get(load_id, 0) for load_id in load_ids}


def read_table(spark: SparkSession, path: str) -> DataFrame:
    return spark.read.format("delta").load(path)


def materialized(df: DataFrame) -> DataFrame:
    """`df` computed now and kept on the executors (as Delta keeps a MERGE's source), cut from its plan.

    Plans built on the result hold no Delta scan. With deletion vectors, every planning of a scan lists the
    table's files in a Spark job, and adaptive execution plans again after each stage: a MERGE source over a
    table read ran ~20 such jobs. Blocks are freed when the result is garbage-collected; lost ones are not
    recomputed (the write fails, and running it again is safe).
    """
    return df.localCheckpoint(eager=True, storageLevel=StorageLevel.MEMORY_AND_DISK)


def run_concurrently(writes: Sequence[Callable[[], None]], max_workers: int = 4) -> None:
    """Commit independent tables side by side: Spark runs jobs of several threads at once, and
    small writes are dominated by fixed per-commit latency. The first failure is raised."""
    with ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="lakenorm-write") as pool:
        for future in [pool.submit(w) for w in writes]:
            future.result()


def replace_all(df: DataFrame, path: str, properties: dict[str, str] | None = None) -> None:
    """Replace the whole table with `df` in one commit (the `overwrite` disposition); `properties`:
    table properties (`delta.*`) for a new table."""
    with_conflict_retry(lambda: df.write.format("delta").mode("overwrite").option("overwriteSchema", "true")
                        .options(**(properties or {})).save(path))


def last_commit_rows(spark: SparkSession, path: str) -> int:
    """Rows the newest commit of the table wrote (Delta's commit metrics: metadata, not data)."""
    history = DeltaTable.forPath(spark, path).history(1).select("operationMetrics").first()
    metrics = (history[0] or {}) if history else {}
    return int(metrics.get("numOutputRows", 0))


def merge_by_key(spark: SparkSession, path: str, source: Callable[[], DataFrame], on: Sequence[str],
                 delete_flag: str) -> None:
    """Upsert `source()` rows into the table at `path` by the `on` columns (NULL-safe), deleting the
    target rows matched by a source row whose `delete_flag` is true: one MERGE, one commit.

    `source` is called again on every attempt, so a retry after a concurrent commit reads fresh data.
    New source columns are added to the table.
    """
    def attempt() -> None:
        rows = source()
        columns = [c for c in rows.columns if c != delete_flag]
        if not is_delta_table(spark, path):
            empty = spark.createDataFrame([], rows.select(*columns).schema)
            empty.write.format("delta").mode("ignore").options(**MERGED_TABLE_PROPERTIES).save(path)
        values = {f"`{c}`": f"s.`{c}`" for c in columns}
        flag = f"s.`{delete_flag}`"
        (DeltaTable.forPath(spark, path).alias("t")
         .merge(rows.alias("s"), " AND ".join(f"t.`{c}` <=> s.`{c}`" for c in on))
         .withSchemaEvolution()
         .whenMatchedDelete(condition=flag)
         .whenMatchedUpdate(set=values)
         .whenNotMatchedInsert(condition=f"NOT {flag}", values=values)
         .execute())
    with_conflict_retry(attempt)


def last_commit_changed_rows(spark: SparkSession, path: str) -> int:
    """Rows the newest commit inserted, updated or deleted (MERGE metrics; other commits: rows written)."""
    history = DeltaTable.forPath(spark, path).history(1).select("operationMetrics").first()
    metrics = (history[0] or {}) if history else {}
    merged = ("numTargetRowsInserted", "numTargetRowsUpdated", "numTargetRowsDeleted")
    if any(m in metrics for m in merged):
        return sum(int(metrics.get(m, 0)) for m in merged)
    return int(metrics.get("numOutputRows", 0))
