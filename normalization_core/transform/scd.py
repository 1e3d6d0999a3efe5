"""Dedup and SCD type 2 history of `append_dedup` streams (SPEC §6), as DataFrame -> DataFrame functions.

A **version** is a record of a key; its row key is a hash of (unique key, the record's canonical JSON, and
the extracted-at time when that is the cursor). Exact duplicates therefore share one row key: they collapse
to one history row, and their children (keyed from the parent's row key) are the same rows too.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from normalization_core import columns as C
from normalization_core.columns import SystemNames
from normalization_core.schema.stream_settings import StreamSettings, resolve_primary_key
from normalization_core.errors import ConfigError
from normalization_core.schema.model import TableSchema
from normalization_core.transform.internal_columns import (
    CDC_POS,
    CDC_UPDATED,
    CURSOR,
    DELETE,
    APPENDED,
    KEY_PART_PREFIX,
    RANK,
    RECORD_HASH,
)
from normalization_core.transform.keys import KeyEncoding, key128, own_row_key
from normalization_core.transform.sql_text import col, column_name, string_literal


@dataclass(frozen=True)
class ScdColumns:
    """Root-table column names that drive dedup: key parts, cursor and the CDC columns (None: absent)."""

    stream: str
    keys: tuple[str, ...]
    cursor: str | None
    """None: the extracted-at time is the cursor."""
    cdc_updated_at: str | None
    cdc_log_pos: str | None
    cdc_deleted_at: str | None


@dataclass(frozen=True)
class KeyRange:
    """Bounds of the leading key column over some keys (`low` None: none of them is non-NULL) and whether
    one of them is NULL. Rows outside hold none of those keys: a Delta scan or MERGE filtered by `rows()`
    skips the files whose statistics lie outside, which is most of a table kept in key order."""

    column: str
    low: Any
    high: Any
    nulls: bool

    def rows(self, table: str | None = None) -> Column:
        """The rows that may hold one of the keys; `table`: the alias to qualify the column with."""
        column = F.col(f"{column_name(table)}.{column_name(self.column)}") if table else col(self.column)
        within = column.between(F.lit(self.low), F.lit(self.high)) if self.low is not None else F.lit(False)
        return within | column.isNull() if self.nulls else within

    def predicate(self, table: str | None = None) -> str:
        """`rows(table)` as SQL (a MERGE's condition, a `replaceWhere`), its bounds the literals `F.lit` makes
        of them."""
        column = f"{column_name(table)}.{column_name(self.column)}" if table else column_name(self.column)
        within = (f"{column} BETWEEN {sql_literal(self.low)} AND {sql_literal(self.high)}" if self.low is not None
                  else "FALSE")
        return f"({within} OR {column} IS NULL)" if self.nulls else within


def sql_literal(value: Any) -> str:
    """A bound of `RANGED_TYPES` as the SQL literal of the type `F.lit` gives it: an integer as INT when it fits,
    else BIGINT (as `F.lit`); a float as DOUBLE; a `Decimal` with its own precision and scale; a date; a string."""
    if isinstance(value, bool):
        raise TypeError("a boolean is no key bound")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value!r}D" if math.isfinite(value) else f"CAST('{value!r}' AS DOUBLE)".replace("inf", "Infinity")
    if isinstance(value, Decimal):
        return f"{value:f}BD"
    if isinstance(value, date) and not isinstance(value, datetime):
        return f"DATE'{value.isoformat()}'"
    if isinstance(value, str):
        return string_literal(value)
    raise TypeError(f"no SQL literal for a key bound of type {type(value).__name__}")


RANGED_TYPES = (T.NumericType, T.StringType, T.DateType)
"""Key types whose bounds come back to Python and go into a predicate as the same literal (a timestamp's
would pass through the Python process's time zone)."""


def key_bounds(keys: DataFrame, cols: ScdColumns) -> list[Column] | None:
    """Aggregates over `keys` giving a `KeyRange`'s `low`, `high` and `nulls` (the leading key's lowest and
    highest value, whether one is NULL); None when its type has no safe literal."""
    leading = cols.keys[0]
    if not isinstance(keys.schema[leading].dataType, RANGED_TYPES):
        return None
    column = col(leading)
    return [F.min(column).alias("low"), F.max(column).alias("high"), F.bool_or(column.isNull()).alias("nulls")]


def scd_columns(settings: StreamSettings, root: TableSchema) -> ScdColumns:
    """Resolve the primary key and cursor paths to root columns; a missing one is a configuration error."""
    by_path = {tuple(c["path"]): c["name"] for c in root["columns"]}
    where = f"stream {settings.name!r}"
    if not settings.primary_key:
        raise ConfigError(where, "destination_sync_mode 'append_dedup' needs a primary_key "
                                 "(set it in the catalog or under sources[].streams)")
    keys = resolve_primary_key(settings, root)
    cursor = None
    if settings.cursor_field:
        cursor = by_path.get(tuple(settings.cursor_field))
        if cursor is None:
            raise ConfigError(where, f"cursor_field {'.'.join(settings.cursor_field)!r} is not a column of the stream")
    cdc_updated = by_path.get((C.CDC_UPDATED_AT,))
    return ScdColumns(
        stream=settings.name, keys=keys,
        cursor=cursor or cdc_updated, cdc_updated_at=cdc_updated,
        cdc_log_pos=by_path.get((C.CDC_LOG_POS,)), cdc_deleted_at=by_path.get((C.CDC_DELETED_AT,)))


def record_hash(variant: Column, data: Column) -> Column:
    """sha256 of the record's canonical JSON (the VARIANT's, keys sorted), else of its text."""
    return F.sha2(F.coalesce(F.to_json(variant), data), 256)


def cursor_column(names: SystemNames, cols: ScdColumns) -> Column:
    return col(cols.cursor) if cols.cursor else F.col(names.extracted_at)


def with_version_keys(typed: DataFrame, names: SystemNames, cols: ScdColumns, root: TableSchema) -> DataFrame:
    """Typed root rows (carrying `RECORD_HASH`) -> unique key, the version key as unique_key_scd (what identifies a
    history row) and as row key, unless the record brings its own row key (dlt's `_dlt_id`): that one is kept, as
    dlt keeps it under each of its merge strategies."""
    unique_key = key128(*[col(k) for k in cols.keys], encoding=KeyEncoding.JSON_ARRAY)
    extra = [] if cols.cursor else [F.col(names.extracted_at)]
    version = key128(unique_key, F.col(RECORD_HASH), *extra, encoding=KeyEncoding.JSON_ARRAY)
    return (typed.withColumn(names.unique_key, unique_key)
            .withColumn(names.row_id(root), _version_row_key(names, root, version))
            .withColumn(names.unique_key_scd, version)
            .drop(RECORD_HASH))


def _version_row_key(names: SystemNames, root: TableSchema, version: Column) -> Column:
    """A version's row key: the record's own, else `version`. `typed_root` keyed a row without its own key by its
    raw id: that key is replaced."""
    if own_row_key(root) is None:
        return version
    row_key = col(names.row_id(root))
    return F.when(row_key == key128(F.col(names.raw_id)), version).otherwise(row_key)


def _order(names: SystemNames, cols: ScdColumns, newest_first: bool) -> list[Column]:
    """Version order (SPEC §6): cursor (NULL oldest), CDC updated at, CDC log position, extracted at,
    load ID, file, line; the version key last makes it total."""
    parts = [F.col(CURSOR), F.col(CDC_UPDATED), F.col(CDC_POS), F.col(names.extracted_at),
             F.col(names.load_id), F.col(names.file), F.col(names.line), F.col(names.unique_key_scd)]
    return [p.desc_nulls_last() if newest_first else p.asc_nulls_first() for p in parts]


def history_rows(versions: DataFrame, names: SystemNames, cols: ScdColumns) -> DataFrame:
    """All versions of some keys -> their history: one row per version key (the oldest duplicate), with
    valid from / to and is-current recomputed per key."""
    optional = lambda name: col(name) if name else F.lit(None)  # noqa: E731
    ordered = (versions.withColumn(CURSOR, cursor_column(names, cols))
               .withColumn(CDC_UPDATED, optional(cols.cdc_updated_at))
               .withColumn(CDC_POS, optional(cols.cdc_log_pos)))
    oldest_first = Window.partitionBy(F.col(names.unique_key_scd)).orderBy(*_order(names, cols, newest_first=False))
    distinct = (ordered.withColumn(RANK, F.row_number().over(oldest_first))
                .where(F.col(RANK) == 1).drop(RANK))
    newest_first = (Window.partitionBy(*[col(k) for k in cols.keys])
                    .orderBy(*_order(names, cols, newest_first=True)))
    deleted = col(cols.cdc_deleted_at).isNotNull() if cols.cdc_deleted_at else F.lit(False)
    history = (distinct.withColumn(RANK, F.row_number().over(newest_first))
               .withColumn(names.valid_from, F.col(CURSOR))
               .withColumn(names.valid_to, F.lag(F.col(CURSOR), 1).over(newest_first))
               .withColumn(names.is_current, (F.col(RANK) == 1) & ~deleted))
    return history.drop(RANK, CURSOR, CDC_UPDATED, CDC_POS)


def history_changes(incoming: DataFrame, existing: DataFrame | None, names: SystemNames, cols: ScdColumns,
                    load_ids: Sequence[str], newest_only: bool = False) -> DataFrame:
    """MERGE source for the history table: the recomputed history of the touched keys (`DELETE` false)
    plus the touched rows that no longer exist (`DELETE` true).

    `existing`: the history rows of the keys in `incoming`. Rows this load wrote before are dropped
    first, so running loads again gives the same rows. `newest_only`: `existing` holds only the keys' newest rows
    (`newest_rows`), and the source is `appended_history`'s.
    """
    recompute = appended_history if newest_only and existing is not None else recomputed_history
    recomputed = recompute(incoming, existing, names, cols, load_ids)
    if existing is None:
        return recomputed.withColumn(DELETE, F.lit(False))
    version = names.unique_key_scd
    gone = (existing.select(col(version)).join(recomputed.select(col(version)), version, "left_anti")
            .withColumn(DELETE, F.lit(True)))
    return recomputed.withColumn(DELETE, F.lit(False)).unionByName(gone, allowMissingColumns=True)


def recomputed_history(incoming: DataFrame, existing: DataFrame | None, names: SystemNames, cols: ScdColumns,
                       load_ids: Sequence[str]) -> DataFrame:
    """The history of the keys in `incoming` after the loads `load_ids`: `existing` (their history rows, None:
    none) without the rows those loads wrote before (so running loads again gives the same rows), plus `incoming`."""
    if existing is None:
        return history_rows(incoming, names, cols)
    base = [c for c in incoming.columns if c in existing.columns]
    others = existing.where(~F.col(names.load_id).isin(list(load_ids))).select(*[col(c) for c in base])
    return history_rows(incoming.unionByName(others, allowMissingColumns=True), names, cols)


def history_order(names: SystemNames, cols: ScdColumns) -> tuple[str, ...]:
    """The order a history table's rows are written in: each key's newest row (`valid_to` NULL) first, in key order,
    then the closed rows by when they were closed, so the newest rows sit in files of their own (see
    `appended_history`)."""
    return names.valid_to, *cols.keys


def newest_rows(names: SystemNames, table: str | None = None) -> str:
    """SQL predicate of the history rows a load appending newer versions can change: each key's newest, whose
    `valid_to` is NULL (with the rows whose next version has a NULL cursor, which `appended_history` checks for);
    `table`: the alias to qualify the column with."""
    column = f"{column_name(table)}.{column_name(names.valid_to)}" if table else column_name(names.valid_to)
    return f"{column} IS NULL"


NOT_APPENDED = "lakenorm: a load's versions are not all newer than their keys' history"
"""The error `appended_history` raises when its precondition does not hold in the rows read."""


def appended_history(incoming: DataFrame, newest: DataFrame, names: SystemNames, cols: ScdColumns,
                     load_ids: Sequence[str]) -> DataFrame:
    """`recomputed_history` from only the touched keys' newest history rows (`newest`, read by `newest_rows`),
    when each key's incoming versions all come after its history: then every older row stays as it is, only the
    newest gets its `valid_to` (and is-current) and the versions are added. The rows fail with `NOT_APPENDED` when
    that does not hold of the rows read (a version whose cursor is not above its key's newest row's, or NULL; a key
    with more than one row read; a row these loads wrote before): checked within the write that reads them, so a
    concurrent load's commit cannot come between the check and the write, and per key, with no Spark job of its own."""
    base = [c for c in incoming.columns if c in newest.columns]
    rows = (incoming.withColumn(APPENDED, F.lit(True))
            .unionByName(newest.select(*[col(c) for c in base]).withColumn(APPENDED, F.lit(False)),
                         allowMissingColumns=True))  # (a column new in these loads: NULL in the rows held)
    per_key = Window.partitionBy(*[col(k) for k in cols.keys])
    held, cursor = ~F.col(APPENDED), cursor_column(names, cols)
    rows_held = F.count_if(held).over(per_key)
    newest_held = F.max(F.when(held, cursor)).over(per_key)
    misfit = ((rows_held > 1) | (held & F.col(names.load_id).isin(list(load_ids)))
              | (F.col(APPENDED) & (rows_held == 1) & ~F.coalesce(cursor > newest_held, F.lit(False))))
    fits = F.when(misfit, F.raise_error(F.lit(NOT_APPENDED))).otherwise(F.lit(True))  # (or the write fails)
    checked = rows.withColumn(APPENDED, fits).where(F.col(APPENDED)).drop(APPENDED)
    return history_rows(checked, names, cols)


def touched(table: DataFrame, keys: DataFrame, cols: ScdColumns, how: str = "left_semi") -> DataFrame:
    """Rows of `table` whose key is (`left_anti`: is not) one of `keys`, compared column by column."""
    aliased = keys.select(*[col(k).alias(f"{KEY_PART_PREFIX}{i}") for i, k in enumerate(cols.keys)])
    on = [table[column_name(k)].eqNullSafe(aliased[f"{KEY_PART_PREFIX}{i}"]) for i, k in enumerate(cols.keys)]
    return table.join(aliased, on, how)


def current_columns(names: SystemNames, history_columns: Sequence[str]) -> list[str]:
    """The current table's columns: the history's without file, line and the SCD columns (bar the unique key)."""
    dropped = {names.file, names.line, names.unique_key_scd, names.valid_from, names.valid_to, names.is_current}
    return [c for c in history_columns if c not in dropped]


def current_changes(history: DataFrame, keys: DataFrame, names: SystemNames, cols: ScdColumns) -> DataFrame:
    """MERGE source for the current table from the history rows of the touched keys: the current version
    of each live key (`DELETE` false) and, for keys whose newest version is a delete, a `DELETE` marker."""
    rows = history.where(F.col(names.is_current)).select(*[col(c) for c in current_columns(names, history.columns)])
    closed = touched(keys, rows.select(*[col(k) for k in cols.keys]), cols, "left_anti")
    return (rows.withColumn(DELETE, F.lit(False))
            .unionByName(closed.withColumn(DELETE, F.lit(True)), allowMissingColumns=True))
