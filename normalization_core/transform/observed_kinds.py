"""The (JSON path, value kind) pairs of a stream's records, aggregated on the executors (SPEC §5.2).

Each record's values down to a depth are gathered in the row itself (arrays of (path, value) nodes, one
projection per level, objects stepping into their keys and arrays into their elements), then exploded once:
one Spark job for all the levels, whose distinct (path, kind) pairs alone reach the driver (a few per column), so
the records never leave the executors. Records nested deeper than the depth are gathered again to a greater
one. The pure side (`schema.inference`, over the kinds and type rules of `schema.column_types`) builds the schema.
"""
from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from normalization_core.columns import SystemNames
from normalization_core.schema.column_types import ARRAY_STEP, EPOCH_FAR, EPOCH_RANGE_SECONDS, KEY_STEP
from normalization_core.transform.internal_columns import EXTRACTED_AT, PATH, VALUE, VALUE_KIND
from normalization_core.transform.kinds import inference_text, value_kind
from normalization_core.transform.sql_text import col, column_name, string_literal

FIRST_DEPTH = 4
"""Levels gathered by the first job (most records' depth: each level gathered costs every record a projection);
records nested deeper are gathered again to four times as many."""
_CONTAINERS = ("object", "array")
_NODE_PATH, _NODE_VALUE = "p", "v"


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
    records = parse_record_variants(raw_rows, names)
    depth = FIRST_DEPTH
    while True:
        found = _pairs(_nodes(records, depth), epochs).collect()  # metadata: a few (path, kind) pairs per column
        pairs = {(tuple(row[0]), row[1]) for row in found}
        if not any(len(path) == depth and kind in _CONTAINERS for path, kind in pairs):
            return pairs
        depth *= 4


def _nodes(records: DataFrame, depth: int) -> DataFrame:
    """(`PATH`, `VALUE`, `EXTRACTED_AT`) of every value of the records down to `depth` levels below the record."""
    levels = [f"#level{i}" for i in range(depth + 1)]
    root = f"array(named_struct('{_NODE_PATH}', CAST(array() AS array<string>), '{_NODE_VALUE}', {column_name(VALUE)}))"
    frame = records.select(F.col(EXTRACTED_AT), F.expr(root).alias(levels[0]))
    for above, level in zip(levels, levels[1:]):
        frame = frame.select("*", F.expr(_children(column_name(above))).alias(level))
    every = F.expr("explode(concat(" + ", ".join(column_name(level) for level in levels) + "))")
    nodes = frame.select(F.col(EXTRACTED_AT), every.alias("#node"))
    node = col("#node")
    return nodes.select(node.getField(_NODE_PATH).alias(PATH), node.getField(_NODE_VALUE).alias(VALUE),
                        F.col(EXTRACTED_AT))


def _children(nodes: str) -> str:
    """SQL: the nodes one level below `nodes`: each object's values under `k:<key>`, each array's elements under
    `[]` (a value neither casts to NULL, its part empty)."""
    p, v = _NODE_PATH, _NODE_VALUE
    keys = (f"transform(map_entries(try_cast(n.{v} AS map<string,variant>)), e -> named_struct('{p}', "
            f"concat(n.{p}, array(concat({string_literal(KEY_STEP)}, e.key))), '{v}', e.value))")
    elements = (f"transform(try_cast(n.{v} AS array<variant>), x -> named_struct('{p}', "
                f"concat(n.{p}, array({string_literal(ARRAY_STEP)})), '{v}', x))")
    return f"flatten(transform({nodes}, n -> concat(coalesce({keys}, array()), coalesce({elements}, array()))))"


def _pairs(nodes: DataFrame, epochs: bool) -> DataFrame:
    """The distinct (path, kind) pairs of the nodes' values (and `EPOCH_FAR` ones, with `epochs`)."""
    seen = nodes.select(PATH, VALUE, EXTRACTED_AT, value_kind(VALUE).alias(VALUE_KIND))
    if epochs:
        kind = F.col(VALUE_KIND)
        seen = seen.select(PATH, F.explode(F.array(kind, _far_number(kind))).alias(VALUE_KIND))
    return seen.where(F.col(VALUE_KIND).isNotNull()).select(PATH, VALUE_KIND).distinct()


def _far_number(kind: Column) -> Column:
    """`EPOCH_FAR` for a number that is not epoch seconds near its record's extracted at."""
    seconds = F.col(VALUE).try_cast("double")
    near = F.abs(seconds - F.unix_timestamp(F.col(EXTRACTED_AT))) <= EPOCH_RANGE_SECONDS
    return F.when(kind.isin("bigint", "double", "decimal") & ~F.coalesce(near, F.lit(False)), F.lit(EPOCH_FAR))
