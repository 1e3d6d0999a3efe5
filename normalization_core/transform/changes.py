"""The changes typing records in a row's meta column (`_norm_meta.changes`, SPEC §5.1): a value set to NULL
is a change `{field, NULLED, reason}`."""
from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from normalization_core.transform.sql_text import col, text_struct

NULLED, TRUNCATED = "NULLED", "TRUNCATED"
OWN_REASON = "DESTINATION_"
"""Reasons of the changes lakenorm makes start so (a producer's own start `SOURCE_`, `PLATFORM_`)."""
TYPECAST_ERROR = OWN_REASON + "TYPECAST_ERROR"
FIELD_SIZE_LIMITATION = OWN_REASON + "FIELD_SIZE_LIMITATION"
"""A value kept in a type too small for it: a number a double holds with fewer digits than were written."""
CHANGE_TYPE = T.StructType([
    T.StructField("field", T.StringType()),
    T.StructField("change", T.StringType()),
    T.StructField("reason", T.StringType()),
])
_CHANGES = T.ArrayType(CHANGE_TYPE).simpleString()
META_TYPE = T.StructType([T.StructField("changes", T.ArrayType(CHANGE_TYPE))])
"""`_norm_meta`: `struct<changes: array<struct<field, change, reason>>>`."""


def nulled(field: str, failed: Column, reason: str = TYPECAST_ERROR) -> Column:
    """The change struct where `failed` holds, else NULL."""
    return _change(field, failed, NULLED, reason)


def truncated(field: str, lost: Column) -> Column:
    """The change struct where the value kept lost part of the one written (`lost`), else NULL."""
    return _change(field, lost, TRUNCATED, FIELD_SIZE_LIMITATION)


def _change(field: str, when: Column, change: str, reason: str) -> Column:
    return F.when(when, text_struct({"field": field, "change": change, "reason": reason}))


def meta_column(changes: Sequence[Column]) -> Column:
    """`_norm_meta` from change candidates; an empty array when nothing changed.

    Every expression is flat (n-ary over the candidates), never a chain as deep as the number of columns: a
    wide stream's chain of ORs overflowed the driver's stack while Spark converted and analyzed it."""
    empty = F.array().cast(_CHANGES)
    if not changes:
        return F.struct(empty.alias("changes"))
    # Most rows change nothing: the array and its (interpreted) filter are only built for rows that do.
    changed = F.coalesce(*changes).isNotNull()
    kept = F.filter(F.array(*changes), lambda change: change.isNotNull())
    return F.struct(F.when(changed, kept).otherwise(empty).alias("changes"))


def with_upstream_changes(meta: Column, upstream: Sequence[str]) -> Column:
    """`meta` with the producer's own changes (a raw column, when the input kind has them) before lakenorm's,
    as Airbyte's destinations keep a source's changes in `_airbyte_meta.changes`."""
    if not upstream:
        return meta
    empty = F.array().cast(_CHANGES)
    return F.struct(F.concat(F.coalesce(col(upstream[0]).cast(_CHANGES), empty),
                             meta.getField("changes")).alias("changes"))
