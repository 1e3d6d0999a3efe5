"""Rows and values a schema contract discards (`schema.contract.Discards`, SPEC §5.4), left out of the typed
tables on the executors and counted.

A discarded row takes the rows nested in it along: a child row whose parent row is discarded is discarded
too (a join with the parent's discarded row keys, built only where a parent can lose rows).

`append` and `overwrite` tables count while they are written (`DataFrame.observe`, `discard`). A MERGE's source
may be evaluated more than once, so `append_dedup` tables count with explicit aggregates (`flag_discards`,
`without_discarded`, `counted_discards`).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F

from normalization_core.columns import SystemNames
from normalization_core.schema.contract import Discards
from normalization_core.schema.model import StreamSchema
from normalization_core.transform.internal_columns import (
    DISCARDED,
    DISCARDED_VALUES,
    PARENT_DISCARDED,
    TABLE_NAME,
)
from normalization_core.transform.sql_text import col


@dataclass(frozen=True)
class DiscardedCounts:
    rows: int
    """Rows left out (a discarded row, a row nested in one, every row of a discarded table)."""
    values: int
    """Values left out of rows that were written."""


@dataclass(frozen=True)
class Flagged:
    """Typed tables with what the contract discards marked, not yet left out."""

    frames: dict[str, DataFrame]
    """Tables that keep rows, each with `DISCARDED` (the row goes) and `DISCARDED_VALUES` (values it loses)."""
    dropped: dict[str, DataFrame]
    """Whole tables discarded: their rows."""


@dataclass(frozen=True)
class Discarding:
    """The frames to write (discarded tables left out), and how to read what each table discarded."""

    frames: dict[str, DataFrame]
    observations: dict[str, Observation]
    dropped: dict[str, DataFrame]
    """Whole tables discarded: their rows, counted per load with `discarded_counts`."""


def flag_discards(frames: dict[str, DataFrame], schema: StreamSchema, discards: Discards,
                  names: SystemNames) -> Flagged:
    """`frames` (tables of the load's full schema, parents before children) with what `discards` leaves out
    marked. A table whose parent is not among `frames` loses only its own rows (and its children theirs)."""
    tables = {t["name"]: t for t in schema["tables"]}
    losing: dict[str, DataFrame] = {}
    flagged, dropped = {}, {}
    for name, df in frames.items():
        if name in discards.tables:
            dropped[name] = df
            continue
        table = tables[name]
        gone = _own_discard(discards.rows.get(name, ()))
        parent = table.get("parent")
        if parent in losing:  # the parent loses rows: so do its children
            keys = losing[parent].where(F.col(DISCARDED)).select(col(names.row_id(tables[parent])).alias(
                names.parent_key(table)), F.lit(True).alias(PARENT_DISCARDED))
            df = df.join(keys, names.parent_key(table), "left")
            gone = gone | F.coalesce(F.col(PARENT_DISCARDED), F.lit(False))
        df = df.withColumn(DISCARDED, gone).withColumn(DISCARDED_VALUES, _values(discards.values.get(name, ())))
        if discards.rows.get(name) or parent in losing:
            losing[name] = df
        flagged[name] = df
    return Flagged(flagged, dropped)


def without_discarded(df: DataFrame, table: str, discards: Discards) -> DataFrame:
    """A flagged table's rows that are kept, without the discarded columns and the flags."""
    left_out = [*discards.rows.get(table, ()), *discards.values.get(table, ()), DISCARDED, DISCARDED_VALUES,
                PARENT_DISCARDED]
    return df.where(~F.col(DISCARDED)).drop(*left_out)


def discard(frames: dict[str, DataFrame], schema: StreamSchema, discards: Discards, names: SystemNames,
            load_ids: Sequence[str]) -> Discarding:
    """`frames` (every table of the load's full schema, parents first) without what `discards` leaves out,
    counted while they are written."""
    flagged = flag_discards(frames, schema, discards, names)
    kept, observations = {}, {}
    for name, df in flagged.frames.items():
        observation = Observation()  # to be verified over Spark Connect (see `io.delta.create_table_with`)
        metrics = [m for i, load_id in enumerate(load_ids) for m in (
            F.count_if(F.col(DISCARDED) & _of_load(names, load_id, load_ids)).alias(f"rows{i}"),
            F.coalesce(F.sum(F.when(~F.col(DISCARDED) & _of_load(names, load_id, load_ids),
                                    F.col(DISCARDED_VALUES))), F.lit(0)).alias(f"values{i}"))]
        kept[name] = without_discarded(df.observe(observation, *metrics), name, discards)
        observations[name] = observation
    return Discarding(kept, observations, flagged.dropped)


def _own_discard(columns: Sequence[str]) -> Column:
    """Any of `columns` set: one flat expression, not a chain of ORs as deep as the number of columns."""
    if not columns:
        return F.lit(False)
    return F.array_contains(F.array(*[col(c).isNotNull() for c in columns]), True)


def _values(columns: Sequence[str]) -> Column:
    """How many of `columns` are set: flat (the set ones' count), not a chain of additions."""
    if not columns:
        return F.lit(0).cast("long")
    return F.size(F.filter(F.array(*[col(c).isNotNull() for c in columns]), lambda set_: set_)).cast("long")


def _of_load(names: SystemNames, load_id: str, load_ids: Sequence[str]) -> Column:
    return F.lit(True) if len(load_ids) == 1 else F.col(names.load_id) == F.lit(load_id)


def discarded_counts(discarding: Discarding, names: SystemNames, load_ids: Sequence[str]
                     ) -> dict[str, dict[str, DiscardedCounts]]:
    """Per table, per load: what was discarded (after the writes of `discarding.frames` have run)."""
    counts: dict[str, dict[str, DiscardedCounts]] = {}
    for table, observation in discarding.observations.items():
        metrics = observation.get
        counts[table] = {load_id: DiscardedCounts(int(metrics[f"rows{i}"]), int(metrics[f"values{i}"]))
                         for i, load_id in enumerate(load_ids)}
    counts.update(counted_discards(Flagged({}, discarding.dropped), names, load_ids))
    return _with_losses(counts)


def counted_discards(flagged: Flagged, names: SystemNames, load_ids: Sequence[str]
                     ) -> dict[str, dict[str, DiscardedCounts]]:
    """Per table, per load: what `flagged` discards, aggregated in one Spark job (tables that lost nothing left out)."""
    parts = [df.groupBy(names.load_id).agg(F.count_if(F.col(DISCARDED)).alias("rows"), F.coalesce(
        F.sum(F.when(~F.col(DISCARDED), F.col(DISCARDED_VALUES))), F.lit(0)).alias("values"))
             .withColumn(TABLE_NAME, F.lit(table)) for table, df in flagged.frames.items()]
    parts += [df.groupBy(names.load_id).agg(F.count(F.lit(1)).alias("rows"), F.lit(0).cast("long").alias("values"))
              .withColumn(TABLE_NAME, F.lit(table)) for table, df in flagged.dropped.items()]
    if not parts:
        return {}
    found = {(row[TABLE_NAME], row[names.load_id]): DiscardedCounts(int(row["rows"]), int(row["values"]))
             for row in reduce(DataFrame.unionByName, parts).collect()}  # one row per table and load: metadata
    tables = [*flagged.frames, *flagged.dropped]
    return _with_losses({t: {load_id: found.get((t, load_id), DiscardedCounts(0, 0)) for load_id in load_ids}
                         for t in tables})


def _with_losses(counts: dict[str, dict[str, DiscardedCounts]]) -> dict[str, dict[str, DiscardedCounts]]:
    return {t: c for t, c in counts.items() if any(n.rows or n.values for n in c.values())}
