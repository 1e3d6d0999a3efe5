"""Delta writes: atomic per table, idempotent per load ID, retried on concurrent commits."""
from __future__ import annotations

import logging
import random
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import TypeVar

from delta.exceptions import DeltaConcurrentModificationException
from deltalake.exceptions import DeltaError
from pyspark import StorageLevel
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, Observation, Row, SparkSession
from pyspark.sql import functions as F

from normalization_core.io.storage import is_uri, open_delta_table
from normalization_core.transform.sql_text import col, cols, column_name, table_ref

T = TypeVar("T")
LOG = logging.getLogger("lakenorm")
"""lakenorm's log: Dagster shows its records in the run's event log (`python_logs` in dagster.yaml)."""
DELETION_VECTORS = "delta.enableDeletionVectors"
DV_FEATURE = "deletionVectors"
MAX_ATTEMPTS = 8
TARGET = "t"
"""The alias of the target table in a MERGE (`merge_by_key`'s `target_rows` qualifies its columns with it)."""
SOURCE = "s"
"""The alias of the source rows in a MERGE."""
KEY_ORDERED_FILE_ROWS = 250_000
"""Most rows per data file of a table written in key order. A MERGE rewrites (or, with deletion vectors,
searches) every file that holds a key it touches; with files this size in key order, an update to a range of
keys touches about as many files whatever the table's size (~30 MB files for a 2M-row history of 4 columns)."""
_RACE_MARKERS = ("DELTA_CONCURRENT", "DELTA_PROTOCOL_CHANGED", "DELTA_METADATA_CHANGED", "DELTA_PATH_EXISTS",
                 "DELTA_SCHEMA_CHANGE_SINCE_ANALYSIS", "ConcurrentAppendException", "ProtocolChangedException",
                 "FileAlreadyExistsException")


class SourceTableChanged(Exception):
    """Another writer committed to a table a MERGE's source was read from, after that read: the MERGE may have
    applied rows the source table no longer holds, so it runs again (a race, like Delta's own conflicts)."""


def with_conflict_retry(action: Callable[[], T], table: str, attempts: int = MAX_ATTEMPTS) -> T:
    """Run a Delta commit to `table` (its path), again after a losing optimistic-concurrency race.

    Every action passed here is idempotent (replace a load's rows, MERGE by key), so running it
    again after another writer committed first gives the same table as running it once. Each retry is
    a warning in lakenorm's log, naming the table and the attempt.
    """
    for attempt in range(1, attempts + 1):
        try:
            return action()
        except Exception as exc:  # noqa: BLE001 - Delta's races arrive as several exception types
            if attempt == attempts or not _is_race(exc):
                raise
            LOG.warning("concurrent commit on %s (attempt %d of %d), retrying: %s", table, attempt, attempts,
                        str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__)
            time.sleep(min(2.0, 0.05 * 2 ** attempt) * (1 + random.random()))
    raise AssertionError("unreachable")


def _is_race(exc: Exception) -> bool:
    # Over Spark Connect, Delta's errors arrive as pyspark's own exceptions: the markers in the message tell them.
    if isinstance(exc, (DeltaConcurrentModificationException, SourceTableChanged)):
        return True
    return any(marker in str(exc) for marker in _RACE_MARKERS)


def is_delta_table(spark: SparkSession, path: str, storage_options: dict[str, str] | None = None) -> bool:
    """Whether `path` holds a Delta table with a commit (a `_delta_log` another writer is creating holds none).

    Asked before most reads and writes, so it must be cheap: the log is read with delta-rs (~2 ms, no JVM) when it
    can be (a local path; an object store with `storage_options`), else Spark resolves the table (the analysis of
    `read_table`, ~30 ms: the log read on the driver, no Spark job). Neither needs more than Spark Connect carries:
    Delta's `DeltaTable.isDeltaTable` goes through the JVM of a classic session."""
    logged = _logged_version(path, storage_options)
    if logged is not _UNKNOWN:
        return logged is not None
    try:
        read_table(spark, path).schema  # noqa: B018 - analysis only: an AnalysisException when there is no table
    except AnalysisException:
        return False
    return True


def table_version(spark: SparkSession, path: str, storage_options: dict[str, str] | None = None) -> int:
    """The table's newest version (-1 when there is no table, as Delta's log has it), also one another writer
    committed; asked twice per MERGE that checks its source table.

    Read from the log with delta-rs (a few ms, no Spark job) when it can be (see `is_delta_table`). Else
    `DESCRIBE HISTORY ... LIMIT 1`, which costs 1-2 Spark jobs and ~0.5 s (measured with Delta 4.4): an object store
    without `storage_options`, or a log delta-rs cannot read."""
    logged = _logged_version(path, storage_options)
    if logged is not _UNKNOWN:
        return -1 if logged is None else logged
    try:
        rows = spark.sql(f"DESCRIBE HISTORY {table_ref(path)} LIMIT 1").select("version").collect()  # metadata
    except AnalysisException:
        return -1
    return int(rows[0][0]) if rows else -1


_UNKNOWN = object()


def _logged_version(path: str, storage_options: dict[str, str] | None) -> int | None | object:
    """The table's newest version read by delta-rs, None when there is no table, `_UNKNOWN` when delta-rs cannot
    tell (an object store without options, a log it cannot read)."""
    if is_uri(path) and storage_options is None:
        return _UNKNOWN
    try:
        table = open_delta_table(path, storage_options)
    except DeltaError:
        return _UNKNOWN
    return None if table is None else table.version()


def table_rows(path: str, storage_options: dict[str, str] | None = None, object_store: bool = False) -> int | None:
    """The rows of the table at `path` as its log's file statistics count them (delta-rs, no Spark job); None when
    they cannot be read or a file has no row count. On an object store only with `object_store` (from one thread:
    its log listed from many threads at once timed out against a local S3 server)."""
    if is_uri(path) and not object_store:
        return None
    try:
        table = open_delta_table(path, storage_options)
        counts = None if table is None else table.get_add_actions(flatten=True).column("num_records").to_pylist()
    except (DeltaError, KeyError):
        return None
    return None if counts is None or None in counts else sum(counts)


def replace_where(df: DataFrame, path: str, predicate: str) -> None:
    """Replace exactly the rows matching `predicate` in the table at `path` with `df`, in one commit."""
    with_conflict_retry(lambda: replace_where_writer(df, predicate).save(path), path)


def replace_where_writer(df: DataFrame, predicate: str):  # -> DataFrameWriter
    return df.write.format("delta").mode("overwrite").option("replaceWhere", predicate).option("mergeSchema", "true")


def read_table(spark: SparkSession, path: str) -> DataFrame:
    return spark.read.format("delta").load(path)


@contextmanager
def temp_view(df: DataFrame) -> Iterator[str]:
    """`df` as a temporary view, for SQL statements (a MERGE's source), dropped afterwards. Its name is used by no
    other call: passes of one session run side by side in threads."""
    name = f"lakenorm_source_{uuid.uuid4().hex}"
    df.createTempView(name)
    try:
        yield name
    finally:
        df.sparkSession.catalog.dropTempView(name)


def materialized(df: DataFrame) -> DataFrame:
    """`df` computed now and kept on the executors (as Delta keeps a MERGE's source), cut from its plan.

    Plans built on the result hold no Delta scan. With deletion vectors, every planning of a scan lists the
    table's files in a Spark job, and adaptive execution plans again after each stage: a MERGE source over a
    table read ran ~20 such jobs. Blocks are freed when the result is garbage-collected; lost ones are not
    recomputed (the write fails, and running it again is safe).
    """
    return df.localCheckpoint(eager=True, storageLevel=StorageLevel.MEMORY_AND_DISK)


def run_concurrently(writes: Sequence[Callable[[], T]], max_workers: int = 4) -> list[T]:
    """Commit independent tables side by side: Spark runs jobs of several threads at once, and
    small writes are dominated by fixed per-commit latency. Results in order; the first failure is raised."""
    with ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="lakenorm-write") as pool:
        return [future.result() for future in [pool.submit(w) for w in writes]]


def replace_all(df: DataFrame, path: str, properties: dict[str, str] | None = None,
                order_by: Sequence[str] = ()) -> None:
    """Replace the whole table with `df` in one commit (the `overwrite` disposition); `properties`:
    table properties (`delta.*`) for a new table; `order_by`: write the files in that key order."""
    with_conflict_retry(lambda: _writer(df, order_by).mode("overwrite").option("overwriteSchema", "true")
                        .options(**(properties or {})).save(path), path)


def rewrite_in_key_order(spark: SparkSession, path: str, order_by: Sequence[str], files: int | None = None) -> None:
    """The table's rows written again in key order, in one commit that changes no data (`dataChange` false:
    streaming readers of the table skip it); `files`: into that many ranges of keys (None: the session's shuffle
    partitions). A commit between its read and its own is a conflict, retried."""
    with_conflict_retry(lambda: _writer(read_table(spark, path), order_by, ranges=files).mode("overwrite")
                        .option("dataChange", "false").save(path), path)


def _writer(df: DataFrame, order_by: Sequence[str], counted: Observation | None = None,
            few_rows: bool = False, count_column: str | None = None,
            ranges: int | None = None):  # -> DataFrameWriter
    """A Delta writer of `df`, counting its rows into `counted`. With `order_by`, its rows are sorted across
    files (a range of keys per task, files of at most `KEY_ORDERED_FILE_ROWS` rows), so each file's statistics
    bound a narrow range of keys; `few_rows`: `df` is known to be small, so one task sorts it all (the ranges of
    several tasks cost a Spark job of its own, sampling the keys); `count_column`: a boolean column of `df`, not
    written, whose true rows `counted` also counts (as "marked"); `ranges`: how many ranges of keys (files, up to
    `KEY_ORDERED_FILE_ROWS` rows each) `order_by` makes (None: the session's shuffle partitions)."""
    if order_by:
        columns = cols(order_by)
        df = df.repartition(1) if few_rows else df.repartitionByRange(*([ranges] if ranges else []), *columns)
        df = df.sortWithinPartitions(*columns)
    if counted is not None:  # after the sort: the range sampling job runs what is below it
        marked = [F.count_if(col(count_column)).alias("marked")] if count_column else []
        df = df.observe(counted, F.count(F.lit(1)).alias("rows"), *marked)
    if count_column:
        df = df.drop(count_column)
    writer = df.write.format("delta")
    return writer.option("maxRecordsPerFile", KEY_ORDERED_FILE_ROWS) if order_by else writer


def merged_table_properties(deletion_vectors: bool) -> dict[str, str]:
    """Properties of a table updated by MERGE. With deletion vectors a MERGE that touches a few rows of many
    files marks them deleted instead of rewriting those files, but then only readers that apply deletion
    vectors (Spark, delta-rs's query engine) open the table: `DeltaTable.to_pyarrow_table()` refuses it."""
    return {DELETION_VECTORS: str(deletion_vectors).lower()}


def align_deletion_vectors(spark: SparkSession, path: str, deletion_vectors: bool,
                           storage_options: dict[str, str] | None = None) -> None:
    """Make an existing table at `path` use deletion vectors or not, as the source says: turning them on sets
    the property; turning them off drops the table feature (Delta rewrites the files that have deletion
    vectors, in one commit, and lowers the protocol), so every Delta reader opens the table again.

    The table's properties and features are read from its log with delta-rs: no Spark job on every load."""
    table = open_delta_table(path, storage_options)
    if table is None:
        return
    enabled = table.metadata().configuration.get(DELETION_VECTORS) == "true"
    if deletion_vectors and not enabled:
        with_conflict_retry(lambda: spark.sql(
            f"ALTER TABLE {table_ref(path)} SET TBLPROPERTIES ('{DELETION_VECTORS}' = 'true')"), path)
    elif not deletion_vectors and DV_FEATURE in (table.protocol().writer_features or []):
        with_conflict_retry(lambda: spark.sql(f"ALTER TABLE {table_ref(path)} DROP FEATURE {DV_FEATURE}"), path)


def merge_by_key(spark: SparkSession, path: str, source: Callable[[], DataFrame], on: Sequence[str],
                 delete_flag: str, properties: dict[str, str] | None = None, reads: str | None = None,
                 target_rows: str | None = None, order_by: Sequence[str] = (),
                 reads_options: dict[str, str] | None = None) -> int:
    """Upsert `source()` rows into the table at `path` by the `on` columns (NULL-safe), deleting the
    target rows matched by a source row whose `delete_flag` is true: one MERGE, one commit. Returns the
    rows it inserted, updated or deleted (the MERGE's own metrics, not a later commit's).

    `source` is called again on every attempt, so a retry after a concurrent commit reads fresh data.
    New source columns are added to the table; `properties`: table properties (`delta.*`) for a new table.

    A source computed from the table at `path` itself must read it lazily (not `materialized`): the MERGE then
    reads it within its own transaction, so a concurrent commit is a conflict that is retried. A source read
    earlier would be merged into whatever the table holds by then, other writers' commits included.
    `reads`: another Delta table `source()` reads; a commit to it between that read and this MERGE's commit
    makes the MERGE run again (the rows it merged may be out of date).
    `target_rows`: a SQL predicate over the target's columns (qualified by `TARGET`) true for every row a source row
    can match; Delta skips the files whose statistics lie outside. `order_by`: a new table's file order.
    `reads_options`: delta-rs options to read the log of `reads` on an object store (`table_version`).

    The MERGE is SQL over a temporary view of the source (what Spark Connect carries; Delta's Python
    `DeltaTable` API goes through the JVM), its metrics the statement's own result row.
    """
    def attempt() -> int:
        return _unchanged_source(spark, path, reads, reads_options, lambda: _merge_or_create(
            spark, path, source, on, delete_flag, properties or {}, target_rows, order_by))
    return with_conflict_retry(attempt, path)


def replace_slice(spark: SparkSession, path: str, rows: Callable[[], DataFrame], predicate: str,
                  properties: dict[str, str] | None = None, order_by: Sequence[str] = (),
                  reads: str | None = None, reads_options: dict[str, str] | None = None,
                  storage_options: dict[str, str] | None = None, new_rows: int | None = None,
                  count_column: str | None = None) -> int:
    """Replace the rows matching `predicate` (a SQL predicate over the table's columns) in the table at `path` with
    `rows()`, in one commit (a write with `replaceWhere`: ~3 Spark jobs where a MERGE runs ~9); creates the table
    with `properties` when there is none. Returns the rows written.

    Every row of `rows()` must match `predicate` (not checked again: Delta's check is a job of its own). `rows()`
    is called again on every attempt and may read the table at `path` itself, lazily: Delta reads it within the
    write's transaction, so a concurrent commit to those rows is a conflict, retried. `reads`, `reads_options`,
    `order_by`: as for `merge_by_key`; `storage_options`: delta-rs options to read the log at `path` (`table_rows`);
    `new_rows`: at most how many of `rows()` the table does not hold yet (None: not known); `count_column`: a
    boolean column of `rows()`, not written: the rows where it is true are counted instead (counted after the sort,
    whose sampling job would count what is below it a second time)."""
    def write() -> int:
        exists = is_delta_table(spark, path)  # decided before `rows()` reads it (see `_merge_or_create`)
        df = rows()
        if not exists:
            return create_table_with(df.drop(count_column) if count_column else df, path, properties or {}, order_by)
        counted = Observation()
        held = table_rows(path, storage_options)
        few_rows = None not in (held, new_rows) and held + new_rows < KEY_ORDERED_FILE_ROWS  # a slice's most
        (_writer(df, order_by, counted, few_rows, count_column).mode("overwrite").option("replaceWhere", predicate)
         .option("mergeSchema", "true").save(path))
        return int(counted.get["marked" if count_column else "rows"])
    return with_conflict_retry(lambda: _unchanged_source(spark, path, reads, reads_options, write), path)


def _unchanged_source(spark: SparkSession, path: str, reads: str | None, reads_options: dict[str, str] | None,
                      write: Callable[[], T]) -> T:
    """`write()` to the table at `path`, whose rows are computed from the table at `reads`: a commit to `reads`
    between the read and `write`'s own commit raises `SourceTableChanged` (the write runs again)."""
    read_version = table_version(spark, reads, reads_options) if reads else -1  # -1: no table, nothing read
    written = write()
    if read_version >= 0 and table_version(spark, reads, reads_options) != read_version:
        raise SourceTableChanged(f"{reads} has a commit newer than version {read_version}, which the source of "
                                 f"the write to {path} was read from")
    return written


def _merge_or_create(spark: SparkSession, path: str, source: Callable[[], DataFrame], on: Sequence[str],
                     delete_flag: str, properties: dict[str, str], target_rows: str | None,
                     order_by: Sequence[str]) -> int:
    # Whether the table exists is decided before `source()` reads it: a source built while the table did not
    # exist must create it (and lose to a concurrent creator, then retry), never MERGE into its rows.
    exists = is_delta_table(spark, path)
    rows = source()
    columns = [c for c in rows.columns if c != delete_flag]
    if not exists:
        return create_table_with(rows.where(~col(delete_flag)).select(*cols(columns)), path, properties, order_by)
    names = [column_name(c) for c in columns]
    flag = f"{SOURCE}.{column_name(delete_flag)}"
    matched = " AND ".join(f"{TARGET}.{column_name(c)} <=> {SOURCE}.{column_name(c)}" for c in on)
    condition = matched if target_rows is None else f"({target_rows}) AND {matched}"
    with temp_view(rows) as view:
        metrics = merge_sql(spark, f"""MERGE WITH SCHEMA EVOLUTION INTO {table_ref(path)} AS {TARGET}
            USING {view} AS {SOURCE} ON {condition}
            WHEN MATCHED AND {flag} THEN DELETE
            WHEN MATCHED THEN UPDATE SET {", ".join(f"{n} = {SOURCE}.{n}" for n in names)}
            WHEN NOT MATCHED AND NOT {flag} THEN INSERT ({", ".join(names)})
                VALUES ({", ".join(f"{SOURCE}.{n}" for n in names)})""")
    return sum(int(metrics[m]) for m in ("num_updated_rows", "num_deleted_rows", "num_inserted_rows"))


def merge_sql(spark: SparkSession, statement: str) -> Row:
    """Run a `MERGE INTO` statement; its one row of metrics (`num_affected_rows`, `num_updated_rows`,
    `num_deleted_rows`, `num_inserted_rows`), the statement's own result computed on the driver: metadata.
    (Delta's MERGE leaves named parameter markers unbound, Delta 4.4: values go into the text as literals.)"""
    return spark.sql(statement).first()


def create_table_with(rows: DataFrame, path: str, properties: dict[str, str], order_by: Sequence[str] = ()) -> int:
    """A new table holding `rows`, which is what a MERGE into an empty table inserts, in one commit (a MERGE
    costs ~20 Spark jobs); returns its rows, counted while writing. Losing the creation to another writer is a
    race: the retry MERGEs."""
    # Observation: observed metrics of `format("delta")` writes were reported empty over Connect 4.1; over
    # Connect 4.2 they arrive (tests/normalization_core/runtime/test_engine.py compares the counts with classic's).
    counted = Observation()
    # "error", not its synonym "errorifexists": Spark Connect's client knows only the first
    _writer(rows, order_by, counted).mode("error").options(**properties).save(path)
    return int(counted.get["rows"])