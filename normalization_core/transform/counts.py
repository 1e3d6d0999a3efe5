"""Counters gathered while a typed table is written (`DataFrame.observe`): no extra pass over the data."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame, Observation
from pyspark.sql import functions as F

from normalization_core.columns import SystemNames
from normalization_core.transform.typing import NULLED

NULLED_VALUES = "nulled_values"
NULLED_ROWS = "nulled_rows"
ROWS = "rows"


@dataclass(frozen=True)
class NulledCounts:
    values: int
    """Values set to NULL while typing (`NULLED` changes)."""
    rows: int
    """Rows with at least one `NULLED` change."""


def observe_loads(df: DataFrame, names: SystemNames, load_ids: Sequence[str]) -> tuple[DataFrame, Observation]:
    """`df` observed for its rows and `NULLED` changes per load; read them with `load_counts` after the write."""
    nulled = F.size(F.filter(F.col(names.meta).getField("changes"), lambda c: c.getField("change") == NULLED))
    metrics = []
    for i, load_id in enumerate(load_ids):
        of_load = F.col(names.load_id) == F.lit(load_id)
        metrics += [F.count_if(of_load).alias(f"{ROWS}{i}"),
                    F.coalesce(F.sum(F.when(of_load, nulled)), F.lit(0)).alias(f"{NULLED_VALUES}{i}"),
                    F.count_if(of_load & (nulled > 0)).alias(f"{NULLED_ROWS}{i}")]
    observation = Observation()
    return df.observe(observation, *metrics), observation


def load_counts(observation: Observation, load_ids: Sequence[str]) -> dict[str, tuple[int, NulledCounts]]:
    """Rows and NULLED counts per load of a completed write (blocks until its action has finished)."""
    metrics = observation.get
    return {load_id: (int(metrics[f"{ROWS}{i}"]), NulledCounts(int(metrics[f"{NULLED_VALUES}{i}"]),
                                                              int(metrics[f"{NULLED_ROWS}{i}"])))
            for i, load_id in enumerate(load_ids)}
