"""`append`: each load's rows of the stream's typed root and nested-child tables (SPEC §4.2, §5.1, §6).

The raw rows of the loads are parsed once; every table of the stream is projected from that parse. A load's
rows replace what an earlier run of the same load wrote; a rebuild replaces every table with all of raw.
"""
from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from normalization_core.checks.data_checks import ROWS_TYPED
from normalization_core.columns import SystemNames
from normalization_core.dispositions.base import (
    Disposition,
    PlannedStream,
    TableCheck,
    TablesOfSource,
    TypedCounts,
    kept_rows,
)
from normalization_core.io.delta import read_table, replace_all, run_concurrently
from normalization_core.io.load_writes import replace_loads
from normalization_core.transform.counts import load_counts, nulled_by_load, observe_loads
from normalization_core.transform.discard import discard, discarded_counts
from normalization_core.transform.nesting import typed_tables
from normalization_core.transform.parse import RawRecords, parse_records


class Append(Disposition):
    """Each load's rows are appended (a load run again replaces its own rows)."""

    name = "append"
    summary = "each load's rows are appended"
    whole_tables = False
    """Whether a load replaces the whole table (else only its own rows)."""

    def write(self, spark: SparkSession, tables: TablesOfSource, plan: PlannedStream, raw_rows: DataFrame | RawRecords,
              load_ids: Sequence[str]) -> dict[str, TypedCounts]:
        return write_typed_tables(spark, tables, plan, raw_rows, load_ids, self.whole_tables)

    def rebuild(self, spark: SparkSession, tables: TablesOfSource, plan: PlannedStream, raw_rows: DataFrame
                ) -> dict[str, int]:
        names, schema = tables.names, plan.load_schema or plan.schema
        parsed = parse_records(raw_rows, names, schema).persist(StorageLevel.MEMORY_AND_DISK)
        try:
            frames = kept_rows(typed_tables(parsed, names, schema, normalized_at=F.current_timestamp()), plan, names)
            paths = {t: tables.path(t) for t in frames}
            run_concurrently([partial(replace_all, df, paths[t]) for t, df in frames.items()])
        finally:
            parsed.unpersist()
        return {t: read_table(spark, p).count() for t, p in paths.items()}

    def own_checks(self, plan: PlannedStream, names: SystemNames) -> list[TableCheck]:
        return [TableCheck(ROWS_TYPED, plan.tables[0])]


def write_typed_tables(spark: SparkSession, source_tables: TablesOfSource, plan: PlannedStream,
                       raw_rows: DataFrame | RawRecords, load_ids: Sequence[str], whole_tables: bool
                       ) -> dict[str, TypedCounts]:
    """Write the stream's typed tables for the loads of `raw_rows` (one commit per table); counts per load.

    `whole_tables`: replace each table (pass the newest load's rows only), else these loads' rows of it.
    """
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
        if whole_tables:
            writes = [partial(replace_all, df, paths[t]) for t, (df, _) in observed.items()]
        else:
            writes = [partial(replace_loads, df, paths[t], names.load_id, load_ids,
                              source_tables.storage_options(paths[t])) for t, (df, _) in observed.items()]
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
