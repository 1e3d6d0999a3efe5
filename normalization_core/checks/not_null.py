"""dlt's `nullable: false` column hint (SPEC §5.4): a record whose value is null or missing fails the load
before anything is committed, as dlt's normalizer fails it. One aggregate over the load's records."""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from normalization_core.columns import SystemNames
from normalization_core.configuration.config import SourceConfig
from normalization_core.errors import NotNullViolation
from normalization_core.transform.internal_columns import VALUE
from normalization_core.transform.kinds import is_present
from normalization_core.transform.observed_kinds import parse_record_variants

_OBJECT = "map<string,variant>"


def check_not_null(source: SourceConfig, stream: str, raw_rows: DataFrame, names: SystemNames) -> None:
    """Raise `NotNullViolation` for the first non-nullable hinted key some record has no value for."""
    override = source.streams.get(stream)
    keys = sorted(key for key, hint in (override.columns if override else {}).items() if not hint.nullable)
    if not keys:
        return
    records = parse_record_variants(raw_rows, names).select(F.col(VALUE).try_cast(_OBJECT).alias(VALUE))
    counts = records.select(*[F.count_if(~is_present(F.col(VALUE)[key])).alias(str(i))
                              for i, key in enumerate(keys)]).first()  # one counter per key: metadata
    for i, key in enumerate(keys):
        if counts is not None and counts[str(i)]:
            raise NotNullViolation(source.name, stream, key, int(counts[str(i)]))
