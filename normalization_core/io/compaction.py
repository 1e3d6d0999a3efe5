"""Compaction that comes with the loads: the small files of the tables loads append to stay few, with no schedule.

Each load appends a file or two to each table it adds rows to (`io.load_writes`): after 1,000 loads such a table
would hold ~1,000 small files, and every read of it, every MERGE source built from it and every replay of its log
would pay for each. After a pass, each table it wrote that holds `COMPACT_AT_FILES` or more files below
`TINY_FILE_BYTES` (what small loads leave), or `COMPACT_AT_SMALL_FILES` or more below `SMALL_FILE_BYTES` (what large
passes leave), gets its files below `SMALL_FILE_BYTES` rewritten into few (Delta's OPTIMIZE, bin-packing them into
files of up to `COMPACTED_FILE_BYTES`). A table's small files stay below those thresholds plus the large files its
data needs, one compaction's work stays bounded whatever the table's size (a file once large is never rewritten
again), and the check costs no Spark job (the log's file list, read by delta-rs). A pass of a million records writes
a few dozen files of a few MB per table: rewriting them all at once would cost about as much as writing them did
and buy little, so they wait for the second tier, as Delta's auto compaction (`autoCompact.minNumFiles`, 50) does.

A table kept in key order (an `append_dedup` stream's history and current tables) is never bin-packed, which would
mix key ranges: it is rewritten in key order (`maintenance.compact_in_key_order`'s rule) once it holds more than
twice the files its rows need and at least `COMPACT_AT_FILES`.

A compaction commits with `dataChange` false and changes no row. It never conflicts with a concurrent load's append;
against a concurrent load that replaces rows of a file it rewrites, one of the two commits loses the optimistic
race and runs again (`delta.with_conflict_retry`), on the table the other left.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from deltalake.exceptions import DeltaError
from pyspark.sql import SparkSession

from normalization_core.io.delta import (
    KEY_ORDERED_FILE_ROWS,
    LOG,
    rewrite_in_key_order,
    run_concurrently,
    table_ref,
    with_conflict_retry,
)
from normalization_core.io.storage import open_delta_table
from normalization_core.runtime.settings import session_settings

COMPACT_AT_FILES = 10
"""Tiny files of a table that start its compaction: a table a small load appends one file to is compacted every
~10 loads (a compaction costs about one small load's write)."""
TINY_FILE_BYTES = 1024 * 1024
"""A file below this size costs more to open than to read: what a small load leaves."""
COMPACT_AT_SMALL_FILES = 50
"""Small files of a table that start its compaction whatever their size (Delta's `autoCompact.minNumFiles`)."""
SMALL_FILE_BYTES = 32 * 1024 * 1024
"""Files below this size are compacted together; larger ones are left as they are."""
COMPACTED_FILE_BYTES = 128 * 1024 * 1024
"""The largest file a compaction writes (Delta's `optimize.maxFileSize` for it)."""
COMPACTION_CONF = {"spark.databricks.delta.optimize.minFileSize": str(SMALL_FILE_BYTES),
                   "spark.databricks.delta.optimize.maxFileSize": str(COMPACTED_FILE_BYTES)}


@dataclass(frozen=True)
class Compacted:
    """One table's compaction: the files it replaced and the files it wrote."""

    path: str
    files_removed: int
    files_added: int


@dataclass(frozen=True)
class TableFiles:
    """A table's data files, from its log: how many, how many are small and tiny, its rows (None: not known)."""

    files: int
    small: int
    tiny: int
    rows: int | None


def table_files(path: str, storage_options: dict[str, str] | None = None) -> TableFiles | None:
    """The data files of the table's newest version from its log (delta-rs, no Spark job); None when there is no
    table or its log cannot be read by delta-rs."""
    try:
        table = open_delta_table(path, storage_options)
        if table is None:
            return None
        actions = table.get_add_actions(flatten=True)
        sizes = actions.column("size_bytes").to_pylist()
        counts = actions.column("num_records").to_pylist()
    except (DeltaError, KeyError):
        return None
    rows = None if None in counts else sum(counts)
    return TableFiles(len(sizes), sum(1 for size in sizes if size < SMALL_FILE_BYTES),
                      sum(1 for size in sizes if size < TINY_FILE_BYTES), rows)


def compact_small_files(spark: SparkSession, path: str) -> Compacted:
    """Delta's OPTIMIZE of the table at `path`, bin-packing its files below `SMALL_FILE_BYTES` only (one commit)."""
    with session_settings(spark, COMPACTION_CONF):
        metrics = with_conflict_retry(lambda: spark.sql(f"OPTIMIZE {table_ref(path)}").select("metrics").first()[0],
                                      path)  # one row of metrics: metadata
    return Compacted(path, int(metrics["numFilesRemoved"]), int(metrics["numFilesAdded"]))


def needs_compaction(files: TableFiles, key_order: Sequence[str] = ()) -> bool:
    """Whether a table with `files` is due (see the module's text)."""
    if not key_order:
        return files.tiny >= COMPACT_AT_FILES or files.small >= COMPACT_AT_SMALL_FILES
    return files.files >= COMPACT_AT_FILES and files.files > 2 * key_ordered_files(files.rows)


def key_ordered_files(rows: int | None) -> int:
    """The files a table of `rows` kept in key order needs (`delta.KEY_ORDERED_FILE_ROWS` rows each)."""
    return max(1, math.ceil((rows or 0) / KEY_ORDERED_FILE_ROWS))


def compact_tables(spark: SparkSession, paths: Iterable[str], key_orders: Mapping[str, Sequence[str]] | None = None,
                   storage_options: Mapping[str, dict[str, str] | None] | None = None) -> list[Compacted]:
    """Compact each table of `paths` that is due, several side by side; `key_orders`: the key columns of the tables
    (by path) kept in key order; `storage_options`: delta-rs options per path (an object store's tables)."""
    orders, options = key_orders or {}, storage_options or {}
    due = []
    for path in dict.fromkeys(paths):
        files = table_files(path, options.get(path))
        if files is not None and needs_compaction(files, orders.get(path, ())):
            due.append((path, files))
    if not due:
        return []
    compacted = run_concurrently([lambda p=p, f=f: _compact(spark, p, f, orders.get(p, ()), options.get(p))
                                  for p, f in due])
    return [done for done in compacted if done is not None]


def _compact(spark: SparkSession, path: str, files: TableFiles, key_order: Sequence[str],
             storage_options: dict[str, str] | None) -> Compacted | None:
    """One table's compaction; a failure is a warning (the loads are complete without it; the next pass tries
    again), None."""
    try:
        if key_order:
            rewrite_in_key_order(spark, path, key_order, None if files.rows is None else key_ordered_files(files.rows))
            after = table_files(path, storage_options)
            done = Compacted(path, files.files, after.files if after is not None else 0)
        else:
            done = compact_small_files(spark, path)
    except Exception as exc:  # noqa: BLE001 - any failure leaves the table as it was (one commit, or none)
        LOG.warning("compaction of %s failed, left to the next pass: %s", path,
                    (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300])
        return None
    LOG.info("compacted %s: %d files into %d", path, done.files_removed, done.files_added)
    return done
