"""Writing a load's rows: each table's rows of the pass's load IDs replaced in one commit, idempotent per load ID.

A new load is appended when the table's log shows it cannot hold the load yet (`write_loads`); the log's file
statistics are read by delta-rs, without a Spark job.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

from deltalake.exceptions import DeltaError
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from normalization_core.io.delta import (
    LOG,
    create_table_with,
    is_delta_table,
    read_table,
    replace_where_writer,
    with_conflict_retry,
)
from normalization_core.io.storage import is_uri, open_delta_table
from normalization_core.transform.sql_text import col, in_list


def replace_loads(df: DataFrame, path: str, load_column: str, load_ids: Sequence[str],
                  storage_options: dict[str, str] | None = None) -> None:
    """Replace exactly the rows of `load_ids` in the table at `path` with `df`, in one commit (see `write_loads`).

    Load IDs are validated against `^[A-Za-z0-9][A-Za-z0-9._-]*$`, so the predicate is safe.
    """
    replace_loads_counted(df.sparkSession, path, lambda: df, load_column, load_ids, storage_options=storage_options)


def replace_loads_counted(spark: SparkSession, path: str, rows: Callable[[], DataFrame], load_column: str,
                          load_ids: Sequence[str], properties: dict[str, str] | None = None,
                          storage_options: dict[str, str] | None = None) -> int:
    """`replace_loads` of `rows()` (called again on every attempt, so a retry reads fresh data), creating the table
    with `properties` (`delta.*`) when there is none; returns the rows written, counted while writing."""
    return with_conflict_retry(lambda: write_loads(rows(), path, load_column, load_ids, properties, storage_options),
                               path)


def write_loads(df: DataFrame, path: str, load_column: str, load_ids: Sequence[str],
                properties: dict[str, str] | None = None, storage_options: dict[str, str] | None = None) -> int:
    """One attempt of `replace_loads_counted`: the rows of `load_ids` in the table at `path` replaced by `df`.

    A load the table provably does not hold yet (no file's statistics of `load_column` can hold it, read from the
    log by delta-rs) is appended: one Spark job, where a `replaceWhere` costs three (the table's state, the files
    that may hold the load, the write). Two runs of one load appending at once would hold it twice, so after the
    append the log must show exactly the rows appended in files of that load alone; else (another run's commit, or a
    compaction) its rows are replaced, which leaves one copy whatever the order (a run that checks after another's
    append finds the load and replaces)."""
    counted = Observation()  # to be verified over Spark Connect (see `create_table_with`)
    spark = df.sparkSession
    if not is_delta_table(spark, path, storage_options):
        return create_table_with(df, path, properties or {})
    if len(load_ids) == 1 and load_rows_in_log(path, load_column, load_ids[0], storage_options) == (0, False):
        df.observe(counted, F.count(F.lit(1)).alias("rows")).write.format("delta").mode("append") \
            .option("mergeSchema", "true").save(path)
        appended = int(counted.get["rows"])
        if load_rows_in_log(path, load_column, load_ids[0], storage_options) == (appended, False):
            return appended
        LOG.warning("load %s is in %s more than once (a concurrent run): replacing its rows", load_ids[0], path)
        counted = Observation()
    replace_where_writer(df.observe(counted, F.count(F.lit(1)).alias("rows")),
                         in_list(load_column, load_ids)).save(path)
    return int(counted.get["rows"])


def load_rows_in_log(path: str, load_column: str, load_id: str, storage_options: dict[str, str] | None = None
                     ) -> tuple[int, bool] | None:
    """(rows of the files that hold `load_id` alone, whether another file may hold it too) by the statistics of the
    table's log, read by delta-rs (no Spark job); None when they cannot be read (no such column statistics, an
    object store: its rows are replaced)."""
    if is_uri(path):  # (an object store's log listed from many threads timed out against a local S3 server)
        return None
    try:
        table = open_delta_table(path, storage_options)
        actions = None if table is None else table.get_add_actions(flatten=True)
        if actions is None or actions.num_rows == 0:
            return 0, False
        lows, highs, counts = (actions.column(name).to_pylist()
                               for name in (f"min.{load_column}", f"max.{load_column}", "num_records"))
    except (DeltaError, KeyError):
        return None
    alone, elsewhere = 0, False
    for low, high, count in zip(lows, highs, counts):
        if low == high == load_id and count is not None:
            alone += count
        elif low is None or high is None or low <= load_id <= high:  # (truncated or absent statistics: maybe)
            elsewhere = True
    return alone, elsewhere


def rows_per_load(spark: SparkSession, path: str, load_column: str, load_ids: Sequence[str]) -> dict[str, int]:
    """Rows the table holds now for each of `load_ids` (one counter per load reaches the driver)."""
    counts = (read_table(spark, path).where(col(load_column).isin(list(load_ids)))
              .groupBy(col(load_column)).count().collect())  # one counter per load ID: metadata
    found = {row[0]: int(row[1]) for row in counts}
    return {load_id: found.get(load_id, 0) for load_id in load_ids}
