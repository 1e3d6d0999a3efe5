"""How a pass's versions reach an `append_dedup` stream's history and current tables: the touched keys' range
rewritten (copy on write) or a MERGE (merge on read, see `touched_keys.rewrites_range`).

Either way the history is first written as an append (`scd.appended_history`): when each touched key's versions all
come after its history, as loads arriving in order bring them, only each key's newest row changes, so only the files
of newest rows are read and rewritten. The history is written newest rows first (`scd.history_order`), so those files
hold about one row per key however long the history grows. A load whose versions fit in earlier (a late or re-run
load) fails that write before it commits and recomputes the touched keys' whole history.
"""
from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from normalization_core.dispositions.base import PlannedStream, TablesOfSource
from normalization_core.dispositions.touched_keys import TouchedKeys
from normalization_core.io.delta import LOG, TARGET, is_delta_table, materialized, merge_by_key, read_table, replace_slice
from normalization_core.transform.internal_columns import DELETE, RECOMPUTED
from normalization_core.transform.scd import (
    NOT_APPENDED,
    ScdColumns,
    appended_history,
    current_changes,
    current_columns,
    history_changes,
    history_order,
    newest_rows,
    recomputed_history,
    touched,
)
from normalization_core.transform.sql_text import col


def history_written(stream: StreamWrites) -> int:
    """Commit the stream's history as an append, or, when its versions do not all come after their keys' history,
    recomputed; the rows changed."""
    try:
        return stream.history(newest_only=True)
    except Exception as exc:  # noqa: BLE001 - the engine's error types differ (classic, Connect); the text is ours
        if NOT_APPENDED not in str(exc):
            raise
    LOG.info("%s: versions older than their keys' newest history rows, the touched keys' history recomputed",
             stream.history_path)
    return stream.history(newest_only=False)


class StreamWrites:
    """How a pass's versions reach the history and current tables: `history()` commits the history, then
    `current()` the current table; each returns the rows it changed."""

    def __init__(self, spark: SparkSession, source_tables: TablesOfSource, plan: PlannedStream, cols: ScdColumns,
                 incoming: DataFrame, touched_keys: TouchedKeys, load_ids: Sequence[str], props: dict[str, str],
                 paths: dict[str, str]) -> None:
        self.spark, self.source_tables, self.names, self.cols = spark, source_tables, source_tables.names, cols
        self.incoming, self.touched, self.load_ids, self.props = incoming, touched_keys, load_ids, props
        self.current_path = paths[plan.tables[0]]
        self.history_path = paths[self.names.history_table(plan.tables[0])]

    def history(self, newest_only: bool = False) -> int:
        raise NotImplementedError

    def current(self) -> int:
        raise NotImplementedError

    def history_near_keys(self, newest_only: bool = False) -> DataFrame:
        """The history, read lazily, narrowed to the touched keys' range when there is one (`newest_only`: and to
        the keys' newest rows)."""
        history = read_table(self.spark, self.history_path)
        history = history if self.touched.range is None else history.where(self.touched.range.rows())
        return history.where(newest_rows(self.names)) if newest_only else history


class MergeWrites(StreamWrites):
    """One MERGE per table: a new history (created), or keys of a type without a range."""

    def history(self, newest_only: bool = False) -> int:
        order = history_order(self.names, self.cols)
        return merge_by_key(self.spark, self.history_path, lambda: self._history_source(newest_only),
                            [self.names.unique_key_scd], DELETE, self.props,
                            target_rows=self._target_rows(newest_only), order_by=order)

    def current(self) -> int:
        return merge_by_key(self.spark, self.current_path, self._current_source, list(self.cols.keys), DELETE,
                            self.props, reads=self.history_path,
                            reads_options=self.source_tables.storage_options(self.history_path),
                            target_rows=self._target_rows(False), order_by=self.cols.keys)

    def _target_rows(self, newest_only: bool) -> str | None:
        key_range = None if self.touched.range is None else self.touched.range.predicate(TARGET)
        if not newest_only:
            return key_range
        newest = newest_rows(self.names, TARGET)
        return newest if key_range is None else f"{key_range} AND {newest}"

    def _history_source(self, newest_only: bool) -> DataFrame:
        names, cols, keys = self.names, self.cols, self.touched.keys
        if not is_delta_table(self.spark, self.history_path):
            return history_changes(self.incoming, None, names, cols, self.load_ids)
        # Read lazily: the MERGE reads the history in its own transaction (a concurrent run's commit is then a
        # conflict, retried), never rows read before that run committed (a key with two current versions).
        existing = touched(self.history_near_keys(newest_only), keys, cols)
        return history_changes(self.incoming, existing, names, cols, self.load_ids, newest_only)

    def _current_source(self) -> DataFrame:
        history = materialized(touched(self.history_near_keys(newest_only=True), self.touched.keys, self.cols))
        return current_changes(history, self.touched.keys, self.names, self.cols)


class KeyRangeWrites(StreamWrites):
    """The touched keys' range of each table rewritten in one `replaceWhere` commit (~3 Spark jobs, a MERGE ~9):
    the history's from its rows in the range, the touched keys' recomputed; the current table's from the history's
    current rows in the range. The tables are in key order, so the range holds few other keys."""

    def history(self, newest_only: bool = False) -> int:
        """The touched keys' history rows (what a MERGE would update or insert)."""
        def history_slice() -> DataFrame:
            near, keys, cols = self.history_near_keys(newest_only), self.touched.keys, self.cols
            # Read lazily: the write reads the history in its own transaction (see `MergeWrites._history_source`)
            recompute = appended_history if newest_only else recomputed_history
            recomputed = recompute(self.incoming, touched(near, keys, cols), self.names, cols, self.load_ids)
            untouched = touched(near, keys, cols, "left_anti").withColumn(RECOMPUTED, F.lit(False))
            return untouched.unionByName(recomputed.withColumn(RECOMPUTED, F.lit(True)), allowMissingColumns=True)

        predicate = self.touched.range.predicate()
        return replace_slice(self.spark, self.history_path, history_slice,
                             f"{predicate} AND {newest_rows(self.names)}" if newest_only else predicate,
                             self.props, history_order(self.names, self.cols),
                             storage_options=self.source_tables.storage_options(self.history_path),
                             new_rows=self.touched.versions, count_column=RECOMPUTED)

    def current(self) -> int:
        def current_slice() -> DataFrame:  # (a current row is a newest row: only their files are read)
            history = self.history_near_keys(newest_only=True)
            if not is_delta_table(self.spark, self.current_path):  # (the whole table, when there is none)
                history = read_table(self.spark, self.history_path).where(newest_rows(self.names))
            current = history.where(F.col(self.names.is_current))
            return current.select(*[col(c) for c in current_columns(self.names, history.columns)])

        replace_slice(self.spark, self.current_path, current_slice, self.touched.range.predicate(), self.props,
                      self.cols.keys, reads=self.history_path,
                      reads_options=self.source_tables.storage_options(self.history_path),
                      storage_options=self.source_tables.storage_options(self.current_path), new_rows=self.touched.count)
        return self.touched.count  # each touched key's current row written, or deleted
