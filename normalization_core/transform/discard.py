"""Rows and values a schema contract discards (`schema.contract.Discards`, SPEC §5.4), left out of the typed
tables on the executors and counted while the tables are written (`DataFrame.observe`).

A discarded row takes the rows nested in it along: a child row whose parent row is discarded is discarded
too (a join with the parent's discarded row keys, built only where a parent can lose rows).
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
from normalization_core.transform.internal_columns import DISCARDED, PARENT_DISCARDED


@dataclass(frozen=True)
class DiscardedCounts:
    rows: int
    """Rows left out (a discarded row, a row nested in one, every row of a discarded table)."""
    values: int
    """Values left out of rows that were written."""


@dataclass(frozen=True)
class Discarding:
    """The frames to write (discarded tables left out), and how to read what each table discarded."""

    frames: dict[str, DataFrame]
    observations: dict[str, Observation]
    dropped: dict[str, DataFrame]
    """Whole tables discarded: their rows, counted per load with `discarded_counts`."""


def discard(frames: dict[str, DataFrame], schema: StreamSchema, discards: Discards, names: SystemNames,
            load_ids: Sequence[str]) -> Discarding:
    """`frames` (every table of the load's full schema, parents first) without what `discards` leaves out."""
    tables = {t["name"]: t for t in schema["tables"]}
    flagged: dict[str, DataFrame] = {}
    kept, observations, dropped = {}, {}, {}
    for name, df in frames.items():
        if name in discards.tables:
            dropped[name] = df
            continue
        table = tables[name]
        gone = _own_discard(discards.rows.get(name, ()))
        parent = table.get("parent")
        if parent in flagged:  # the parent loses rows: so do its children
            keys = flagged[parent].where(F.col(DISCARDED)).select(F.col(names.row_id(tables[parent])).alias(
                names.parent_key(table)), F.lit(True).alias(PARENT_DISCARDED))
            df = df.join(keys, names.parent_key(table), "left")
            gone = gone | F.coalesce(F.col(PARENT_DISCARDED), F.lit(False))
        df = df.withColumn(DISCARDED, gone)
        if discards.rows.get(name) or parent in flagged:
            flagged[name] = df
        values = _values(discards.values.get(name, ()))
        observation = Observation()
        metrics = [m for i, load_id in enumerate(load_ids) for m in (
            F.count_if(F.col(DISCARDED) & _of_load(names, load_id, load_ids)).alias(f"rows{i}"),
            F.coalesce(F.sum(F.when(~F.col(DISCARDED) & _of_load(names, load_id, load_ids), values)), F.lit(0))
            .alias(f"values{i}"))]
        left_out = [*discards.rows.get(name, ()), *discards.values.get(name, ()), DISCARDED, PARENT_DISCARDED]
        kept[name] = df.observe(observation, *metrics).where(~F.col(DISCARDED)).drop(*left_out)
        observations[name] = observation
    return Discarding(kept, observations, dropped)


def _own_discard(columns: Sequence[str]) -> Column:
    return reduce(lambda a, b: a | b, (F.col(c).isNotNull() for c in columns), F.lit(False))


def _values(columns: Sequence[str]) -> Column:
    return reduce(lambda a, b: a + b, (F.col(c).isNotNull().cast("long") for c in columns), F.lit(0).cast("long"))


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
    for table, df in discarding.dropped.items():
        rows = df.groupBy(names.load_id).count().collect()  # one counter per load: metadata
        found = {row[0]: int(row[1]) for row in rows}
        counts[table] = {load_id: DiscardedCounts(found.get(load_id, 0), 0) for load_id in load_ids}
    return {t: c for t, c in counts.items() if any(n.rows or n.values for n in c.values())}
