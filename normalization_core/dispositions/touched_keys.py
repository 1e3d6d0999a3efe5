"""The keys a pass's versions touch in an `append_dedup` stream's tables, and how those tables take them: the touched
keys' range rewritten (copy on write) or a MERGE (merge on read)."""
from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from normalization_core.dispositions.base import TablesOfSource
from normalization_core.io.delta import is_delta_table, materialized, table_rows
from normalization_core.transform.scd import KeyRange, ScdColumns, key_bounds
from normalization_core.transform.sql_text import col


@dataclass(frozen=True)
class TouchedKeys:
    """The distinct keys of a pass's incoming versions (materialized) and where they lie in the stream's tables."""

    keys: DataFrame
    range: KeyRange | None
    """None: no history yet, or a key type without a range."""
    count: int | None
    """How many keys (known with the range)."""
    versions: int | None
    """How many incoming versions (known with the range, unless the engine delivered no observed metrics)."""


def find_touched_keys(spark: SparkSession, incoming: DataFrame, cols: ScdColumns, history_path: str) -> TouchedKeys:
    """The touched keys, their range in the stream's tables (kept in key order) and count, counted while
    materializing them: no job of their own."""
    versions = Observation()
    keys = (incoming.observe(versions, F.count(F.lit(1)).alias("versions"))
            .select(*[col(k) for k in cols.keys]).distinct())
    bounds = key_bounds(keys, cols) if is_delta_table(spark, history_path) else None
    if bounds is None:
        return TouchedKeys(materialized(keys), None, None, None)
    bounds.append(F.count(F.lit(1)).alias("keys"))
    observed = Observation()  # to be verified over Spark Connect (see `io.delta.create_table_with`)
    keys = materialized(keys.observe(observed, *bounds))
    found = observed.get  # delivered by the materializing job: one row of bounds, metadata
    if "low" not in found:  # a Spark Connect engine on a cluster delivered none for the checkpoint: one small job
        found = keys.agg(*bounds).first().asDict()
    if not found["keys"]:  # nothing to write (every record discarded): the MERGEs' empty sources change nothing
        return TouchedKeys(keys, None, None, None)
    return TouchedKeys(keys, KeyRange(cols.keys[0], found["low"], found["high"], bool(found["nulls"])),
                       int(found["keys"]), versions.get.get("versions"))


MERGE_ON_READ_ROWS = 10_000
"""With deletion vectors, a history of this many rows, and `MERGE_ON_READ_RATIO` times a load's versions, takes the
load by MERGE: Delta marks the rows it replaces deleted and writes only the changed ones (merge on read). Otherwise,
and always without deletion vectors, the touched keys' range is rewritten (copy on write): fewer Spark jobs, but its
cost follows the rows the range holds, which is the whole table when updates spread over every key (BENCHMARKS.md:
a long history of small loads; an `append_dedup` update)."""
MERGE_ON_READ_RATIO = 100
"""A MERGE costs more per version than a rewrite per row: 10,000 versions against 200,000 history rows were rewritten
in 16-19 s and MERGEd in 23 s; against 2,000,000 the two were alike (15.5 s; 13.8-18.2 s); a small load's 50 against
15,000 and 50,000 were faster MERGEd."""


def rewrites_range(source_tables: TablesOfSource, touched_keys: TouchedKeys, history_path: str) -> bool:
    """Whether the touched keys' range is rewritten (`dedup_writes.KeyRangeWrites`) rather than MERGEd
    (`dedup_writes.MergeWrites`)."""
    if touched_keys.range is None:
        return False
    if not source_tables.source.deletion_vectors or touched_keys.versions is None:
        return True
    held = table_rows(history_path, source_tables.storage_options(history_path))  # its log's statistics
    return held is None or held < max(MERGE_ON_READ_ROWS, MERGE_ON_READ_RATIO * touched_keys.versions)
