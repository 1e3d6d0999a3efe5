"""Counters gathered while a typed table is written (`DataFrame.observe`): no extra pass over the data.

Every observed aggregate is updated for every row written, so there are few: rows per load, and NULLED
values and rows over all loads. Per-load NULLED counts of a pass of several loads are read back from the
table's rows that have changes (`nulled_by_load`), and only when the pass NULLED anything.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F

from normalization_core.columns import SystemNames
from normalization_core.transform.changes import NULLED, OWN_REASON
from normalization_core.transform.internal_columns import NULLED_CHANGES

NULLED_VALUES = "nulled_values"
NULLED_ROWS = "nulled_rows"
ROWS = "rows"


@dataclass(frozen=True)
class NulledCounts:
    values: int
    """Values set to NULL while typing (`NULLED` changes)."""
    rows: int
    """Rows with at least one `NULLED` change."""


NONE_NULLED = NulledCounts(0, 0)


def nulled_changes(names: SystemNames) -> Column:
    """The row's number of `NULLED` changes lakenorm made (not the producer's own, kept in the same array)."""
    return F.size(F.filter(F.col(names.meta).getField("changes"),
                           lambda c: (c.getField("change") == NULLED) & c.getField("reason").startswith(OWN_REASON)))


def observe_loads(df: DataFrame, names: SystemNames, load_ids: Sequence[str]) -> tuple[DataFrame, Observation]:
    """`df` observed for its rows per load and its `NULLED` changes; read them with `load_counts` after the write."""
    if len(load_ids) == 1:
        rows = [F.count(F.lit(1)).alias(f"{ROWS}0")]
    else:
        rows = [F.count_if(F.col(names.load_id) == F.lit(load_id)).alias(f"{ROWS}{i}")
                for i, load_id in enumerate(load_ids)]
    nulled = F.col(NULLED_CHANGES)
    metrics = [*rows, F.coalesce(F.sum(nulled), F.lit(0)).alias(NULLED_VALUES),
               F.count_if(nulled > 0).alias(NULLED_ROWS)]
    observation = Observation()  # to be verified over Spark Connect (see `io.delta.create_table_with`)
    counted = df.select("*", nulled_changes(names).alias(NULLED_CHANGES))
    observed = counted.observe(observation, *metrics).drop(NULLED_CHANGES)
    return observed, observation


def load_counts(observation: Observation, load_ids: Sequence[str]) -> dict[str, tuple[int, NulledCounts | None]]:
    """Rows and NULLED counts per load of a completed write (blocks until its action has finished). NULLED
    counts are None where the pass of several loads NULLED values: read them with `nulled_by_load`."""
    metrics = observation.get
    nulled = NulledCounts(int(metrics[NULLED_VALUES]), int(metrics[NULLED_ROWS]))
    if len(load_ids) == 1:
        return {load_ids[0]: (int(metrics[f"{ROWS}0"]), nulled)}
    per_load = NONE_NULLED if nulled == NONE_NULLED else None
    return {load_id: (int(metrics[f"{ROWS}{i}"]), per_load) for i, load_id in enumerate(load_ids)}


def nulled_by_load(table: DataFrame, names: SystemNames, load_ids: Sequence[str]) -> dict[str, NulledCounts]:
    """NULLED values and rows per load in a typed table's rows of `load_ids` (one counter pair per load)."""
    changed = table.where(F.col(names.load_id).isin(list(load_ids))).select(
        names.load_id, nulled_changes(names).alias(NULLED_CHANGES)).where(F.col(NULLED_CHANGES) > 0)
    rows = changed.groupBy(names.load_id).agg(F.sum(NULLED_CHANGES), F.count(F.lit(1))).collect()  # per load: metadata
    found = {row[0]: NulledCounts(int(row[1]), int(row[2])) for row in rows}
    return {load_id: found.get(load_id, NONE_NULLED) for load_id in load_ids}
