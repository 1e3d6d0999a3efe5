"""Typed root and nested-child tables of one stream for some loads (SPEC §4.2, §5.1, §6).

The raw rows of the loads are parsed once; every table of the stream is projected from that parse.
Plans (which tables, which schema) come from `plan` and `load_plans`.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from normalization_core.dedup_load import write_dedup_tables
from normalization_core.io.delta import read_table, replace_all, replace_loads, rows_per_load, run_concurrently
from normalization_core.plan import StreamPlan
from normalization_core.source_tables import SourceTables
from normalization_core.transform.counts import NulledCounts, load_counts, nulled_by_load, observe_loads
from normalization_core.transform.discard import DiscardedCounts, discard, discarded_counts
from normalization_core.transform.nesting import typed_tables
from normalization_core.transform.parse import RawRecords, parse_records


@dataclass(frozen=True)
class TypedCounts:
    """What one load put in each typed table of its stream."""

    rows: dict[str, int]
    nulled: dict[str, NulledCounts]
    discarded: dict[str, DiscardedCounts] = field(default_factory=dict)
    """Rows and values the stream's schema contract left out, per table (SPEC §5.4)."""


def write_typed_tables(spark: SparkSession, source_tables: SourceTables, plan: StreamPlan, raw_rows: DataFrame | RawRecords,
                       load_ids: Sequence[str]) -> dict[str, TypedCounts]:
    """Write the stream's typed tables for the loads of `raw_rows` (one commit per table); counts per load.

    `append` replaces these loads' rows; `overwrite` replaces the whole table (pass the newest load's rows
    only); `append_dedup` merges the loads into history and current tables.
    """
    if plan.mode == "append_dedup":
        return dedup_counts(spark, source_tables, plan, raw_rows, load_ids)
    names = source_tables.names
    schema = plan.load_schema or plan.schema
    parsed = parse_records(raw_rows, names, schema)
    if not parsed.with_lines or plan.discards:  # (else read from the lines' cache)
        parsed = parsed.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        frames = typed_tables(parsed, names, schema, normalized_at=F.current_timestamp())
        discarding = discard(frames, schema, plan.discards, names, load_ids) if plan.discards else None
        frames = discarding.frames if discarding else frames
        observed = {table: observe_loads(df, names, load_ids) for table, df in frames.items()}
        paths = {table: source_tables.path(table) for table in frames}
        if plan.mode == "overwrite":
            writes = [partial(replace_all, df, paths[t]) for t, (df, _) in observed.items()]
        else:
            writes = [partial(replace_loads, df, paths[t], names.load_id, load_ids) for t, (df, _) in observed.items()]
        run_concurrently(writes)
        discarded = discarded_counts(discarding, names, load_ids) if discarding else {}
    finally:
        parsed.unpersist()
    counts = {table: load_counts(observation, load_ids) for table, (_, observation) in observed.items()}
    nulled = {table: {load_id: n for load_id, (_, n) in per_load.items()} for table, per_load in counts.items()}
    for table, per_load in nulled.items():
        if None in per_load.values():
            nulled[table] = nulled_by_load(read_table(spark, paths[table]), names, load_ids)
    return {load_id: TypedCounts({t: c[load_id][0] for t, c in counts.items()},
                                 {t: n[load_id] for t, n in nulled.items()},
                                 {t: d[load_id] for t, d in discarded.items()}) for load_id in load_ids}


def dedup_counts(spark: SparkSession, source_tables: SourceTables, plan: StreamPlan, raw_rows: DataFrame | RawRecords,
                 load_ids: Sequence[str]) -> dict[str, TypedCounts]:
    """One load: rows its MERGEs changed per table; several: rows each load holds in each table afterwards."""
    written = write_dedup_tables(spark, source_tables, plan, raw_rows, load_ids)
    discarded = {load_id: {t: d[load_id] for t, d in written.discarded.items()} for load_id in load_ids}
    if len(load_ids) == 1:
        return {load_ids[0]: TypedCounts(written.changed, {}, discarded[load_ids[0]])}
    load_column = source_tables.names.load_id
    held = {t: rows_per_load(spark, source_tables.path(t), load_column, load_ids) for t in written.changed}
    return {load_id: TypedCounts({t: per_load[load_id] for t, per_load in held.items()}, {}, discarded[load_id])
            for load_id in load_ids}
