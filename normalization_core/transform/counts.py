"""Counters gathered while a typed table is written (`DataFrame.observe`): no extra pass over the data."""
from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, Observation
from pyspark.sql import functions as F

from normalization_core.columns import SystemNames
from normalization_core.transform.typing import NULLED

NULLED_VALUES = "nulled_values"
NULLED_ROWS = "nulled_rows"


@dataclass(frozen=True)
class NulledCounts:
    values: int
    """Values set to NULL while typing (`NULLED` changes)."""
    rows: int
    """Rows with at least one `NULLED` change."""


def observe_nulled(df: DataFrame, names: SystemNames) -> tuple[DataFrame, Observation]:
    """`df` observed for its `NULLED` changes; read them with `nulled_counts` after the write."""
    nulled = F.size(F.filter(F.col(names.meta).getField("changes"), lambda c: c.getField("change") == NULLED))
    observation = Observation()
    observed = df.observe(observation, F.coalesce(F.sum(nulled), F.lit(0)).alias(NULLED_VALUES),
                          F.count_if(nulled > 0).alias(NULLED_ROWS))
    return observed, observation


def nulled_counts(observation: Observation) -> NulledCounts:
    """The counters of a completed write (blocks until its action has finished)."""
    metrics = observation.get
    return NulledCounts(int(metrics[NULLED_VALUES]), int(metrics[NULLED_ROWS]))
