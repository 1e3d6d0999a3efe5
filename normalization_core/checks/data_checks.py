"""Data checks on written tables (SPEC §8), as Spark functions returning small results.

Each check aggregates on the executors and collects only counters and at most `MAX_OFFENDING`
offending keys (metadata, not data). Callers pass DataFrames read from Delta; a check scoped to
load IDs filters on the load ID column first, so Delta skips the files of other loads by their stats.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from normalization_core.columns import SystemNames
from normalization_core.schema.model import TableSchema
from normalization_core.transform.sql_text import col, cols, column_name
from normalization_core.transform.raw import typed_line

ROWS_TYPED = "rows_typed_per_load"
NO_ORPHANS = "no_orphan_child_rows"
UNIQUE_KEY = "primary_key_unique"
ONE_CURRENT = "one_current_version_per_key"
NO_OVERLAP = "non_overlapping_validity"
NO_REJECTED = "no_rejected_lines"
"""The checks' names (a disposition says which of its tables get which: `Disposition.checks`)."""

MAX_OFFENDING = 20
_KEY = "#key"


@dataclass(frozen=True)
class CheckOutcome:
    """Whether a check held, how many keys broke it and up to `MAX_OFFENDING` of them."""

    passed: bool
    failures: int
    offending: tuple[str, ...] = ()
    counts: dict[str, int] = field(default_factory=dict)


def _outcome(failing: DataFrame, counts: dict[str, int] | None = None) -> CheckOutcome:
    """`failing` has one row per offending key in column `_KEY`; counts the rows and keeps a sample."""
    sample = failing.select(F.col(_KEY).cast("string").alias(_KEY)).orderBy(_KEY).limit(MAX_OFFENDING)
    total = failing.count()
    offending = tuple(r[_KEY] for r in sample.collect()) if total else ()  # <= MAX_OFFENDING keys: metadata
    return CheckOutcome(total == 0, total, offending, counts or {})


def _of_loads(df: DataFrame, load_column: str, load_ids: Sequence[str] | None) -> DataFrame:
    return df if load_ids is None else df.where(col(load_column).isin(list(load_ids)))


def rows_typed_per_load(raw: DataFrame, root: DataFrame, names: SystemNames, load_ids: Sequence[str],
                        discarded_rows: Mapping[str, int] | None = None) -> CheckOutcome:
    """Every typed raw line (`typed_line`) of each load became exactly one root row (nothing dropped, nothing
    doubled), less the rows a schema contract discarded (`discarded_rows` per load ID: raw keeps them, SPEC §5.4).

    Offending keys are the load IDs whose counts differ.
    """
    return combined(rows_typed_by_load(raw, root, names, load_ids, discarded_rows))


def rows_typed_by_load(raw: DataFrame, root: DataFrame, names: SystemNames, load_ids: Sequence[str],
                       discarded_rows: Mapping[str, int] | None = None) -> dict[str, CheckOutcome]:
    """`rows_typed_per_load` of each load on its own (a load with no line and no row passes)."""
    valid = (_of_loads(raw, names.load_id, load_ids).where(typed_line(names))
             .groupBy(names.load_id).agg(F.count(F.lit(1)).alias("valid")))
    typed = _of_loads(root, names.load_id, load_ids).groupBy(names.load_id).agg(F.count(F.lit(1)).alias("typed"))
    per_load = (valid.join(typed, names.load_id, "full_outer")
                .select(F.col(names.load_id).alias(_KEY), F.coalesce("valid", F.lit(0)).alias("valid"),
                        F.coalesce("typed", F.lit(0)).alias("typed")))
    found = {r[_KEY]: (r["valid"], r["typed"]) for r in per_load.collect()}  # one row per load ID: metadata
    outcomes = {}
    for load_id in load_ids:
        (valid_lines, rows), discarded = found.get(load_id, (0, 0)), (discarded_rows or {}).get(load_id)
        counts = {"valid_raw_lines": valid_lines, "typed_rows": rows}
        if discarded_rows:
            counts["discarded_rows"] = discarded or 0
        bad = valid_lines - (discarded or 0) != rows
        outcomes[load_id] = CheckOutcome(not bad, int(bad), (load_id,) if bad else (), counts)
    return outcomes


def combined(by_load: Mapping[str, CheckOutcome]) -> CheckOutcome:
    """One outcome for several loads' own: failures and counts added up, offending keys in load order (capped)."""
    offending = tuple(key for outcome in by_load.values() for key in outcome.offending)
    counts: dict[str, int] = {}
    for outcome in by_load.values():
        for name, value in outcome.counts.items():
            counts[name] = counts.get(name, 0) + value
    failures = sum(o.failures for o in by_load.values())
    return CheckOutcome(failures == 0, failures, offending[:MAX_OFFENDING], counts)


def orphan_child_rows(child: DataFrame, parent: DataFrame, names: SystemNames, parent_table: str | TableSchema,
                      child_table: str | TableSchema, load_ids: Sequence[str] | None = None) -> CheckOutcome:
    """Child rows whose parent key is not a row key of the parent table. Offending keys: the child rows' keys.

    With `load_ids`, both sides are limited to those loads: a child row and its parent come from the
    same record, hence the same load (append and overwrite tables). Tables are given by name, or as their
    documents (which name their keys under `airbyte`).
    """
    return _outcome(_orphans(child, parent, names, parent_table, child_table, load_ids)
                    .select(col(names.row_id(child_table)).alias(_KEY)))


def orphan_child_rows_by_load(child: DataFrame, parent: DataFrame, names: SystemNames,
                              parent_table: str | TableSchema, child_table: str | TableSchema,
                              load_ids: Sequence[str]) -> dict[str, CheckOutcome]:
    """`orphan_child_rows` of each load on its own: one aggregation, each load's count and first offending keys."""
    orphans = _orphans(child, parent, names, parent_table, child_table, load_ids).select(
        F.col(names.load_id).alias("#load"), col(names.row_id(child_table)).cast("string").alias(_KEY))
    per_load = Window.partitionBy("#load")
    ranked = orphans.select("#load", _KEY, F.count(F.lit(1)).over(per_load).alias("#n"),
                            F.row_number().over(per_load.orderBy(_KEY)).alias("#rank"))
    sample = ranked.where(F.col("#rank") <= MAX_OFFENDING).orderBy("#load", "#rank").collect()  # metadata
    found: dict[str, tuple[int, list[str]]] = {}
    for row in sample:
        found.setdefault(row["#load"], (row["#n"], []))[1].append(row[_KEY])
    return {load_id: CheckOutcome(load_id not in found, found.get(load_id, (0, []))[0],
                                  tuple(found.get(load_id, (0, []))[1])) for load_id in load_ids}


def _orphans(child: DataFrame, parent: DataFrame, names: SystemNames, parent_table: str | TableSchema,
             child_table: str | TableSchema, load_ids: Sequence[str] | None) -> DataFrame:
    parent_key = names.row_id(parent_table)
    link = names.parent_key(child_table) if isinstance(child_table, dict) else names.parent_id(_name(parent_table))
    keys = _of_loads(parent, names.load_id, load_ids).select(col(parent_key).alias("#parent"))
    children = _of_loads(child, names.load_id, load_ids)
    return children.join(keys, children[column_name(link)] == keys["#parent"], "left_anti")


def _name(table: str | TableSchema) -> str:
    return table if isinstance(table, str) else table["name"]


def _key_text(columns: Sequence[str]) -> Column:
    """A readable key for reports (`a=1, b=x`); comparisons always use the columns themselves."""
    return F.concat_ws(", ", *[F.concat(F.lit(f"{c}="), F.coalesce(col(c).cast("string"), F.lit("NULL")))
                               for c in columns])


def unique_primary_key(current: DataFrame, key_columns: Sequence[str]) -> CheckOutcome:
    """No primary key (compared column by column) appears twice. Offending keys: the duplicated keys."""
    duplicated = current.groupBy(*cols(key_columns)).agg(F.count(F.lit(1)).alias("n")).where(F.col("n") > 1)
    return _outcome(duplicated.select(_key_text(key_columns).alias(_KEY)))


def one_current_version(history: DataFrame, current: DataFrame, names: SystemNames,
                        table: str | TableSchema) -> CheckOutcome:
    """Each key has at most one current version in history, and the current table holds exactly
    the current versions (by row key). Offending keys: `unique_key` values, or row keys of the
    current table that history does not mark current (and vice versa)."""
    row_id = names.row_id(table)
    current_flag = F.coalesce(F.col(names.is_current), F.lit(False))
    several = (history.groupBy(names.unique_key).agg(F.count_if(current_flag).alias("n")).where(F.col("n") > 1)
               .select(F.col(names.unique_key).alias(_KEY)))
    marked = history.where(current_flag).select(col(row_id).alias(_KEY))
    shown = current.select(col(row_id).alias(_KEY))
    mismatched = marked.join(shown, _KEY, "left_anti").unionByName(shown.join(marked, _KEY, "left_anti"))
    return _outcome(several.unionByName(mismatched))


def non_overlapping_validity(history: DataFrame, names: SystemNames) -> CheckOutcome:
    """Per key, ordered by valid_from (NULL first), each version ends (valid_to not NULL) no later
    than the next one starts; only the newest may stay open. Offending keys: `unique_key` values."""
    order = Window.partitionBy(names.unique_key).orderBy(
        F.col(names.valid_from).asc_nulls_first(), F.col(names.valid_to).asc_nulls_last())
    following = F.lead(names.valid_from).over(order)
    has_next = F.lead(F.lit(1)).over(order).isNotNull()
    versions = history.select(names.unique_key, names.valid_from, names.valid_to,
                              has_next.alias("#has_next"), following.alias("#next_from"))
    overlaps = (F.col("#has_next") & (F.col(names.valid_to).isNull()
                                       | (F.col(names.valid_to) > F.col("#next_from"))))
    reversed_interval = F.col(names.valid_to) < F.col(names.valid_from)
    bad = versions.where(overlaps | reversed_interval).select(F.col(names.unique_key).alias(_KEY)).distinct()
    return _outcome(bad)
