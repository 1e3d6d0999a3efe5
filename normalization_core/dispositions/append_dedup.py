"""`append_dedup`: history (`<stream>_scd`), current (`<stream>`) and child tables of a stream (SPEC §6, §7).

Per load: the load's versions, plus the history rows of only the keys it touches, are recomputed and applied in
one commit to the history and one to the current table (the touched keys' range rewritten, or a MERGE: see
`touched_keys.rewrites_range`); each child table's rows of the load (the children of its versions) are replaced.
A rebuild runs the same transforms over the whole raw table.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from normalization_core.checks.data_checks import NO_OVERLAP, ONE_CURRENT, UNIQUE_KEY
from normalization_core.columns import SystemNames
from normalization_core.schema.stream_settings import resolve_primary_key
from normalization_core.dispositions.base import (
    Disposition,
    PlannedStream,
    TableCheck,
    TablesOfSource,
    TypedCounts,
    kept_rows,
)
from normalization_core.dispositions.dedup_writes import KeyRangeWrites, MergeWrites, history_written
from normalization_core.dispositions.touched_keys import find_touched_keys, rewrites_range
from normalization_core.errors import ConfigError
from normalization_core.io.delta import (
    align_deletion_vectors,
    materialized,
    merged_table_properties,
    read_table,
    replace_all,
    run_concurrently,
)
from normalization_core.io.load_writes import replace_loads_counted, rows_per_load
from normalization_core.schema import StreamSchema
from normalization_core.schema.contract import NO_DISCARDS, Discards
from normalization_core.schema.model import TableSchema, root_table
from normalization_core.transform.discard import (
    DiscardedCounts,
    counted_discards,
    flag_discards,
    without_discarded,
)
from normalization_core.transform.internal_columns import RECORD_HASH, VERSION
from normalization_core.transform.nesting import child_table, typed_root, typed_tables
from normalization_core.transform.parse import ParsedRecords, RawRecords, parse_records, record_variant
from normalization_core.transform.sql_text import col
from normalization_core.transform.scd import (
    ScdColumns,
    current_columns,
    history_order,
    history_rows,
    record_hash,
    scd_columns,
    with_version_keys,
)


class AppendDedup(Disposition):
    """Every version of each key is kept in a history table; the current table holds the newest per key."""

    name = "append_dedup"
    summary = "every version is kept in the history table; the current table holds the newest per key"
    root_role = "Current table of stream `{stream}` (newest version of each key)"

    def history_table(self, plan: PlannedStream, names: SystemNames) -> str | None:
        return names.history_table(plan.tables[0])

    def graph_parent(self, plan: PlannedStream, names: SystemNames, table: str) -> str | None:
        """The current table and the root's children hang off the history: the current table keeps only the
        newest version of each key, the children link to history rows (of every version)."""
        root = plan.tables[0]
        if table == names.history_table(root):
            return None
        return names.history_table(root) if table == root or plan.parents[table] == root else plan.parents[table]

    def key_ordered_tables(self, plan: PlannedStream, names: SystemNames) -> dict[str, tuple[str, ...]]:
        """The history and current tables (their loads MERGE a range of keys); none when the key is not
        resolvable (a load of that stream reports it)."""
        try:
            keys = scd_columns(plan.settings, root_table(plan.schema)).keys
        except ConfigError:
            return {}
        history = names.history_table(plan.tables[0])
        return {history: history_order(names, scd_columns(plan.settings, root_table(plan.schema))),
                plan.tables[0]: keys}

    def write(self, spark: SparkSession, tables: TablesOfSource, plan: PlannedStream, raw_rows: DataFrame | RawRecords,
              load_ids: Sequence[str]) -> dict[str, TypedCounts]:
        """One load: rows its MERGEs changed per table; several: rows each load holds in each table afterwards."""
        written = write_dedup_tables(spark, tables, plan, raw_rows, load_ids)
        discarded = {load_id: {t: d[load_id] for t, d in written.discarded.items()} for load_id in load_ids}
        if len(load_ids) == 1:
            return {load_ids[0]: TypedCounts(written.changed, {}, discarded[load_ids[0]])}
        held = {t: rows_per_load(spark, tables.path(t), tables.names.load_id, load_ids) for t in written.changed}
        return {load_id: TypedCounts({t: per_load[load_id] for t, per_load in held.items()}, {}, discarded[load_id])
                for load_id in load_ids}

    def rebuild(self, spark: SparkSession, tables: TablesOfSource, plan: PlannedStream, raw_rows: DataFrame
                ) -> dict[str, int]:
        return rebuild_dedup_tables(spark, tables, plan, raw_rows)

    def own_checks(self, plan: PlannedStream, names: SystemNames) -> list[TableCheck]:
        """A unique key in the current table (when the key's paths are columns); one current, non-overlapping
        version per key in the history (table-wide)."""
        root, history = plan.tables[0], names.history_table(plan.tables[0])
        try:
            unique = [TableCheck(UNIQUE_KEY, root)] if resolve_primary_key(plan.settings, root_table(plan.schema)) else []
        except ConfigError:
            unique = []
        return [*unique, TableCheck(ONE_CURRENT, history, root, per_load=False),
                TableCheck(NO_OVERLAP, history, root, per_load=False)]


@dataclass(frozen=True)
class DedupCounts:
    """What applying loads to an `append_dedup` stream's tables did."""

    changed: dict[str, int]
    """Rows each table's MERGE inserted, updated or deleted; a child table's: the rows of the loads written (what its
    MERGE by row key reported: every child row of a load is inserted, or updated by a re-run)."""
    discarded: dict[str, dict[str, DiscardedCounts]] = field(default_factory=dict)
    """Per table, per load: rows and values the stream's schema contract left out (SPEC §5.4; raw keeps them)."""


def write_dedup_tables(spark: SparkSession, source_tables: TablesOfSource, plan: PlannedStream,
                       raw_rows: DataFrame | RawRecords, load_ids: Sequence[str]) -> DedupCounts:
    """Apply loads to the stream's history, current and child tables.

    What the schema contract discards (`plan.discards`) never becomes a version: a discarded root row is left
    out of the incoming versions (so its children, keyed from history rows, go too), a discarded value out of
    its row, a discarded child row out of its table's MERGE source.
    """
    names = source_tables.names
    parsed = parse_versions(raw_rows, names, plan.load_schema or plan.schema).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        changed = _merge_loads(spark, source_tables, plan, parsed, load_ids) if plan.tables else {}
        discarded = _discarded(parsed, names, plan, load_ids) if plan.discards else {}
    finally:
        parsed.unpersist()
    return DedupCounts(changed, discarded)


def _merge_loads(spark: SparkSession, source_tables: TablesOfSource, plan: PlannedStream, parsed: ParsedRecords,
                 load_ids: Sequence[str]) -> dict[str, int]:
    """One commit per table of the stream; rows changed (history, current) or written (children) per table."""
    names = source_tables.names
    cols = scd_columns(plan.settings, root_table(plan.schema))
    root, *children = plan.tables
    paths = {t: source_tables.path(t) for t in plan.disposition.output_tables(plan, names)}
    history_path = paths[names.history_table(root)]
    props = aligned_properties(spark, source_tables, paths.values())
    incoming = _versions(parsed, names, plan.load_schema or plan.schema, cols, plan.discards)
    incoming = incoming.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        touched_keys = find_touched_keys(spark, incoming, cols, history_path)
        writes = KeyRangeWrites if rewrites_range(source_tables, touched_keys, history_path) else MergeWrites
        stream = writes(spark, source_tables, plan, cols, incoming, touched_keys, load_ids, props, paths)
        changed = {names.history_table(root): history_written(stream)}
        tables, table_writes = [root], [stream.current]
        if children:  # the history rows of these loads, read once for all child tables
            loaded = stream.history_near_keys().where(F.col(names.load_id).isin(list(load_ids)))
            versioned = _with_version(parsed, materialized(_version_ids(loaded, names, root_table(plan.schema))),
                                      names)
            # A load's child rows are exactly those of its versions, and none is ever deleted: its rows are
            # replaced (one replaceWhere, ~3 Spark jobs), not MERGEd by row key (~8), with the same result.
            table_writes += [partial(replace_loads_counted, spark, paths[c], partial(_child_table_rows, versioned,
                                     names, plan, children, c), names.load_id, load_ids, props,
                                     source_tables.storage_options(paths[c])) for c in children]
            tables += children
        changed.update(zip(tables, run_concurrently(table_writes)))
    finally:
        incoming.unpersist()
    return changed


def _child_table_rows(versioned: ParsedRecords, names: SystemNames, plan: PlannedStream, children: Sequence[str],
                      child: str) -> DataFrame:
    return _child_rows(versioned, names, plan, children)[child]


def _child_rows(versioned: ParsedRecords, names: SystemNames, plan: PlannedStream, children: Sequence[str]
                ) -> dict[str, DataFrame]:
    """The child tables' rows of the versions, keyed from each version's history row, without what the
    contract discards (a root row it discards is no version, so its children are not among these)."""
    schema = plan.load_schema or plan.schema
    return kept_rows({c: child_table(versioned, names, schema, c, VERSION) for c in children}, plan, names)


def _discarded(parsed: ParsedRecords, names: SystemNames, plan: PlannedStream, load_ids: Sequence[str]
               ) -> dict[str, dict[str, DiscardedCounts]]:
    """What the contract discards of every record of the loads, duplicates too (as for an `append` stream):
    counted by explicit aggregates, once (a MERGE may evaluate its source more than once)."""
    schema = plan.load_schema or plan.schema
    frames = typed_tables(parsed, names, schema, normalized_at=F.current_timestamp())
    return counted_discards(flag_discards(frames, schema, plan.discards, names), names, load_ids)


def rebuild_dedup_tables(spark: SparkSession, source_tables: TablesOfSource, plan: PlannedStream,
                         raw_rows: DataFrame) -> dict[str, int]:
    """Replace the stream's history, current and child tables with those of all of `raw_rows` at once, without
    what the stream's schema contract discards (as its loads left it out)."""
    names = source_tables.names
    root, *children = plan.tables
    paths = {t: source_tables.path(t) for t in plan.disposition.output_tables(plan, names)}
    props = aligned_properties(spark, source_tables, paths.values())
    cols = scd_columns(plan.settings, root_table(plan.schema))
    keys = cols.keys
    parsed = parse_versions(raw_rows, names, plan.load_schema or plan.schema).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        replace_all(scd_history(parsed, names, plan), paths[names.history_table(root)], props,
                    order_by=history_order(names, cols))
        history = read_table(spark, paths[names.history_table(root)])
        current = (history.where(F.col(names.is_current))
                   .select(*[col(c) for c in current_columns(names, history.columns)]))
        writes = [partial(replace_all, current, paths[root], props, order_by=keys)]
        versioned = _with_version(parsed, _version_ids(history, names, root_table(plan.schema)), names)
        writes += [partial(replace_all, rows, paths[c], props)
                   for c, rows in _child_rows(versioned, names, plan, children).items()]
        run_concurrently(writes)
    finally:
        parsed.unpersist()
    return {t: read_table(spark, p).count() for t, p in paths.items()}


def aligned_properties(spark: SparkSession, source_tables: TablesOfSource, paths: Iterable[str]) -> dict[str, str]:
    """The stream's existing tables made to use deletion vectors as the source says; properties for new ones."""
    vectors = source_tables.source.deletion_vectors
    for path in paths:
        align_deletion_vectors(spark, path, vectors, source_tables.storage_options(path))
    return merged_table_properties(vectors)


def scd_history(parsed: ParsedRecords, names: SystemNames, plan: PlannedStream) -> DataFrame:
    """The history of every key in `parsed` (from `parse_versions`), computed at once."""
    cols = scd_columns(plan.settings, root_table(plan.schema))
    versions = _versions(parsed, names, plan.load_schema or plan.schema, cols, plan.discards)
    return history_rows(versions, names, cols)


def parse_versions(raw_rows: DataFrame | RawRecords, names: SystemNames, schema: StreamSchema) -> ParsedRecords:
    """`parse_records` plus each record's content hash (of its VARIANT's canonical JSON)."""
    digest = record_hash(record_variant(names, schema), F.col(names.data)).alias(RECORD_HASH)
    return parse_records(raw_rows, names, schema, carry=[digest])


def _versions(parsed: ParsedRecords, names: SystemNames, schema: StreamSchema, cols: ScdColumns,
              discards: Discards = NO_DISCARDS) -> DataFrame:
    """Typed root rows as versions: row key = version key, plus unique key, file and line; without the rows
    and values `discards` leaves out."""
    root = root_table(schema)
    typed = typed_root(parsed, names, schema, normalized_at=F.current_timestamp(),
                       carry=[RECORD_HASH, names.file, names.line])
    if discards:
        flagged = flag_discards({root["name"]: typed}, schema, discards, names)
        typed = without_discarded(flagged.frames[root["name"]], root["name"], discards)
    return with_version_keys(typed, names, cols, root)


def _version_ids(history: DataFrame, names: SystemNames, root: TableSchema) -> DataFrame:
    return history.select(F.col(names.raw_id), col(names.row_id(root)).alias(VERSION))


def _with_version(parsed: ParsedRecords, versions: DataFrame, names: SystemNames) -> ParsedRecords:
    """Parsed rows that are a history row (duplicates left out), with that row's key (`_version_ids`)."""
    return parsed.with_rows(parsed.rows.join(versions, names.raw_id))
