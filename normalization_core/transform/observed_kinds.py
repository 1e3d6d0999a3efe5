"""The (JSON path, value kind) pairs of a stream's records, aggregated on the executors (SPEC §5.2).

Level by level, from the record down: each value's kind is computed, objects explode into their keys and
arrays into their elements. Only the distinct pairs of a level reach the driver (a few per column),
so the records never leave the executors. The pure side (`schema.inference`, over the kinds and type rules
of `schema.column_types`) builds the schema.
"""
from __future__ import annotations

from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from normalization_core.columns import SystemNames
from normalization_core.schema.column_types import ARRAY_STEP, EPOCH_FAR, EPOCH_RANGE_SECONDS, KEY_STEP
from normalization_core.transform.internal_columns import EXTRACTED_AT, OBJECT_KEY, PATH, VALUE, VALUE_KIND
from normalization_core.transform.kinds import inference_text, value_kind

_OBJECT = "map<string,variant>"
_ARRAY = "array<variant>"


def parse_record_variants(raw_rows: DataFrame, names: SystemNames) -> DataFrame:
    """The valid raw rows' records as one VARIANT column `VALUE`, big integers kept exact."""
    return raw_rows.where(F.col(names.error).isNull()).select(
        F.try_parse_json(inference_text(F.col(names.data))).alias(VALUE),
        F.col(names.extracted_at).alias(EXTRACTED_AT))


def observed_types(raw_rows: DataFrame, names: SystemNames, epochs: bool = False) -> set[tuple[tuple[str, ...], str]]:
    """Distinct (path steps, kind) pairs of the records, down to their deepest value.

    `epochs` (dlt's `timestamp` detection): also `EPOCH_FAR` where a number is not within five years of its
    record's extracted at (dlt: of the time it normalizes; the record's own time keeps a rebuild's schema equal).
    The nesting limit is applied by the layout, which must still see what lies below a limited array.
    """
    frontier = parse_record_variants(raw_rows, names).select(
        F.array().cast(T.ArrayType(T.StringType())).alias(PATH), F.col(VALUE), F.col(EXTRACTED_AT))
    observed: set[tuple[tuple[str, ...], str]] = set()
    previous: DataFrame | None = None
    while True:
        level = frontier.select(PATH, VALUE, EXTRACTED_AT, value_kind(VALUE).alias(VALUE_KIND)).persist(
            StorageLevel.MEMORY_AND_DISK)
        seen = level.where(F.col(VALUE_KIND).isNotNull()).select(PATH, VALUE_KIND)
        if epochs:
            seen = seen.unionByName(_far_numbers(level))
        seen = seen.distinct()
        pairs = seen.collect()  # metadata: a few (path, kind) pairs per column
        if previous is not None:
            previous.unpersist()
        previous = level
        observed |= {(tuple(row[0]), row[1]) for row in pairs}
        if not any(row[1] in ("object", "array") for row in pairs):
            break
        frontier = _children(level)
    previous.unpersist()
    return observed


def _far_numbers(level: DataFrame) -> DataFrame:
    """(path, `EPOCH_FAR`) of the numbers that are not epoch seconds near their record's extracted at."""
    seconds = F.col(VALUE).try_cast("double")
    near = F.abs(seconds - F.unix_timestamp(F.col(EXTRACTED_AT))) <= EPOCH_RANGE_SECONDS
    numbers = level.where(F.col(VALUE_KIND).isin("bigint", "double", "decimal"))
    return numbers.where(~F.coalesce(near, F.lit(False))).select(PATH, F.lit(EPOCH_FAR).alias(VALUE_KIND))


def _children(level: DataFrame) -> DataFrame:
    """Each object's values under `k:<key>`, each array's elements under `[]`, one level down."""
    entries = level.where(F.col(VALUE_KIND) == "object").select(
        F.col(PATH), F.col(EXTRACTED_AT), F.explode(F.col(VALUE).try_cast(_OBJECT)).alias(OBJECT_KEY, VALUE))
    keys = entries.select(F.concat(F.col(PATH), F.array(F.concat(F.lit(KEY_STEP), F.col(OBJECT_KEY)))).alias(PATH),
                          F.col(VALUE), F.col(EXTRACTED_AT))
    elements = level.where(F.col(VALUE_KIND) == "array").select(
        F.concat(F.col(PATH), F.array(F.lit(ARRAY_STEP))).alias(PATH),
        F.explode(F.col(VALUE).try_cast(_ARRAY)).alias(VALUE), F.col(EXTRACTED_AT))
    return keys.unionByName(elements)
