"""Normalizing one load package of one source: read once, write each table atomically."""
from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import partial

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from normalization_core import columns as C
from normalization_core.columns import SystemNames
from normalization_core.configuration.config import LakenormConfig, SourceConfig
from normalization_core.dispositions import TypedCounts
from normalization_core.errors import LakenormError, PackageError, UnknownLoadError
from normalization_core.inputs import source_input
from normalization_core.inputs.base import ledger_path
from normalization_core.inputs.ledger import checksums_of, record_files
from normalization_core.io.delta import is_delta_table, replace_where, run_concurrently
from normalization_core.io.load_packages import LoadPackage
from normalization_core.io.load_writes import replace_loads
from normalization_core.io.reader import unreadable_file
from normalization_core.io.registry import (
    LoadRecord,
    normalized_streams,
    record_dlt_loads,
    record_loads,
)
from normalization_core.io.table_versions import tagged_commits
from normalization_core.passes.catalog_tables import publish_tables
from normalization_core.passes.compaction import compact_written, key_ordered_rows
from normalization_core.passes.pending import find_package, input_bytes
from normalization_core.passes.results import LoadResult, StreamResult
from normalization_core.passes.snapshots import with_table_versions
from normalization_core.passes.stream_subset import complete_loads, only_streams, quarantine_predicate, without_streams
from normalization_core.plans.load_plans import load_plans
from normalization_core.plans.source_tables import SourceTables
from normalization_core.plans.stream_plans import StreamPlan, stream_plans
from normalization_core.plans.table_names import raw_tables
from normalization_core.runtime.connect import union_all
from normalization_core.runtime.spark import large_rewrite_conf, small_input_conf
from normalization_core.transform import raw as R
from normalization_core.transform.parse import read_from_variant, stream_records, with_parsed_records


@dataclass(frozen=True)
class _Counts:
    """Per-stream line counts of one package, aggregated on the executors."""

    lines: dict[str, int]
    rejected: dict[str, int]
    quarantined: int
    states: list[str]
    from_variant: dict[str, int]
    """Records per stream that its tree did not read cleanly (typed from their VARIANT)."""


MAX_LOADS_PER_PASS = 32
"""Loads normalized together at most: bounds the cached lines and the per-load counters of one pass."""


def normalize_load(spark: SparkSession, config: LakenormConfig, source_name: str, load_id: str) -> LoadResult:
    """Normalize one load ID into the source's tables; running it again changes nothing."""
    return normalize_loads(spark, config, source_name, [load_id])[0]


def normalize_loads(spark: SparkSession, config: LakenormConfig, source_name: str, load_ids: Sequence[str],
                    on_error: Callable[[str, LakenormError], None] | None = None,
                    streams: Sequence[str] | None = None) -> list[LoadResult]:
    """`normalize_source` of the source named `source_name` (the by-name entry of notebooks and tests)."""
    return normalize_source(spark, SourceTables.of(config, source_name), load_ids, on_error, streams)


def normalize_source(spark: SparkSession, tables: SourceTables, load_ids: Sequence[str],
                     on_error: Callable[[str, LakenormError], None] | None = None,
                     streams: Sequence[str] | None = None) -> list[LoadResult]:
    """Normalize load IDs of the source of `tables`, several in one pass: one read of their files and one commit
    per table.

    The result equals normalizing them one by one, except that an inferred stream's schema is inferred from
    all loads of the pass at once (as a rebuild does), not evolved load after load. A package that fails
    (an unreadable file, a stream its manifest does not list, a change its schema contract refuses: all
    found before anything is committed) makes its pass run load by load instead, so the other loads still
    land and its error is raised, or, with `on_error`, handed to it (load ID, error) while the remaining
    loads go on.

    `streams`: normalize those streams of the loads only (`stream_subset`); a load without any of them
    gets an empty result and nothing is written for it.
    """
    packages = []
    for load_id in dict.fromkeys(load_ids):
        try:
            packages.append(find_package(tables, load_id))
        except UnknownLoadError as err:
            if on_error is None:
                raise
            on_error(load_id, err)
    results: list[LoadResult] = []
    for start in range(0, len(packages), MAX_LOADS_PER_PASS):
        chunk = packages[start:start + MAX_LOADS_PER_PASS]
        with small_input_conf(spark, input_bytes(chunk)), tagged_commits(spark, [p.load_id for p in chunk]):
            try:
                results += _normalize_pass(spark, tables, chunk, streams)
            except LakenormError:  # a bad package, a change its contract refuses: the others still land
                if len(chunk) == 1 and on_error is None:
                    raise
                results += _load_by_load(spark, tables, chunk, on_error, streams)
    return results


def _load_by_load(spark: SparkSession, tables: SourceTables, packages: list[LoadPackage],
                  on_error: Callable[[str, LakenormError], None] | None,
                  streams: Sequence[str] | None) -> list[LoadResult]:
    results = []
    for package in packages:
        try:
            results += _normalize_pass(spark, tables, [package], streams)
        except LakenormError as err:
            if on_error is None:
                raise
            on_error(package.load_id, err)
    return results


def _normalize_pass(spark: SparkSession, tables: SourceTables, wholes: list[LoadPackage],
                    streams: Sequence[str] | None = None) -> list[LoadResult]:
    source, names = tables.source, tables.names
    packages = wholes if streams is None else [p for p in (only_streams(w, streams) for w in wholes) if p]
    if not packages:
        return [LoadResult(source.name, w.load_id) for w in wholes]
    raw = {s: t for p in packages for s, t in _raw_tables(source, p).items()}
    catalog_plans = stream_plans(source)  # once per pass: `load_plans` takes them
    catalog = {s: p.schema for s, p in catalog_plans.items() if s in raw}
    dropped = {w.load_id: sorted(set(w.streams) - set(raw)) for w in wholes}
    checksums = checksums_of(wholes)  # of producer files (the ledger's), while Spark reads them
    classified = _classified_lines(spark, source, packages, dropped)
    lines = with_parsed_records(R.with_raw_ids(classified), catalog).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        counts = _count_lines(packages, lines, list(catalog))
        writes = [partial(_write_raw, tables, lines, _loads_with(packages, s), s, t) for s, t in raw.items()]
        writes.append(partial(_write_quarantine, spark, tables, packages, lines,
                              sum(c.quarantined for c in counts.values()), streams is not None))
        # schemas first: a load a frozen schema contract refuses fails before anything is committed
        plans = load_plans(spark, tables, catalog_plans, list(raw), partial(_stream_rows, lines, names))
        typed_writes = _typed_writes(spark, tables, packages, lines, plans, counts)
        # side by side: most of a small table's write is the driver planning and committing, which overlaps
        with large_rewrite_conf(spark, key_ordered_rows(tables, plans)):
            written = run_concurrently(typed_writes + writes, max_workers=8)
        typed = {key: n for per_stream in written[:len(typed_writes)] for key, n in per_stream.items()}
    finally:
        lines.unpersist()
    results = [_load_result(source, p, raw, counts[p.load_id], plans, typed) for p in packages]
    versions = _register(spark, tables, packages, results, counts, wholes, streams, checksums)
    compact_written(spark, tables, list(raw.values()), plans, versions)
    done = {r.load_id: r for r in results}
    return [done.get(w.load_id, LoadResult(source.name, w.load_id)) for w in wholes]


def _load_result(source: SourceConfig, package: LoadPackage, raw: dict[str, str], counts: _Counts,
                 plans: dict[str, StreamPlan], typed: dict[tuple[str, str], TypedCounts]) -> LoadResult:
    """`raw`: each stream's raw table."""
    streams = {}
    for stream in package.streams:
        written = typed.get((package.load_id, stream), TypedCounts({}, {}))
        streams[stream] = StreamResult(
            stream, raw[stream], counts.lines.get(stream, 0), counts.rejected.get(stream, 0),
            package.expected_records.get(stream), written.rows,
            plans[stream].version_hash if stream in plans else None, written.nulled, written.discarded)
    return LoadResult(source.name, package.load_id, streams, counts.quarantined)


def _loads_with(packages: list[LoadPackage], stream: str) -> list[str]:
    return [p.load_id for p in packages if stream in p.streams]


def _write_raw(tables: SourceTables, lines: DataFrame, load_ids: list[str], stream: str, table: str) -> None:
    names, path = tables.names, tables.path(table)
    replace_loads(_stream_rows(lines, names, stream), path, names.load_id, load_ids, tables.storage_options(path))


def _stream_rows(lines: DataFrame, names: SystemNames, stream: str) -> DataFrame:
    """The stream's raw rows."""
    return R.raw_rows(_stream_lines(lines, stream), names)


def _stream_lines(lines: DataFrame, stream: str, load_ids: Sequence[str] | None = None) -> DataFrame:
    stream_lines = lines.where((F.col(R.KIND) == "record") & (F.col(R.STREAM) == stream))
    if load_ids is None:
        return stream_lines
    return stream_lines.where(F.col(R.LOAD_ID).isin(list(load_ids)))


def _typed_writes(spark: SparkSession, tables: SourceTables, packages: list[LoadPackage], lines: DataFrame,
                  plans: dict[str, StreamPlan], counts: dict[str, _Counts]
                  ) -> list[Callable[[], dict[tuple[str, str], TypedCounts]]]:
    """One write per stream of its typed tables, each returning counts per (load ID, stream)."""
    return [partial(_write_stream_typed, spark, tables, packages, lines, stream, plan, counts)
            for stream, plan in plans.items() if _loads_with(packages, stream)]


def _write_stream_typed(spark: SparkSession, tables: SourceTables, packages: list[LoadPackage], lines: DataFrame,
                        stream: str, plan: StreamPlan, counts: dict[str, _Counts]
                        ) -> dict[tuple[str, str], TypedCounts]:
    """The loads the stream's disposition takes (`overwrite`: the newest, if no newer load was normalized before)."""
    load_ids = plan.disposition.loads_to_write(spark, tables, stream, [p for p in packages if stream in p.streams])
    if not load_ids:
        return {}
    all_clean = not any(counts[load_id].from_variant.get(stream, 0) for load_id in load_ids)
    rows = stream_records(_stream_lines(lines, stream, load_ids), tables.names, stream, all_clean)
    written = plan.disposition.write(spark, tables, plan, rows, load_ids)
    return {(load_id, stream): n for load_id, n in written.items()}


def _raw_tables(source: SourceConfig, package: LoadPackage) -> dict[str, str]:
    tables = raw_tables(source, package.streams)  # (airbyte's are distinct: clashes get hashed names)
    seen: dict[str, str] = {}
    for stream, table in tables.items():
        if table.lower() in seen:
            raise PackageError(package.load_id, f"streams {seen[table.lower()]!r} and {stream!r} "
                                                f"both normalize to table {table!r}; rename one")
        seen[table.lower()] = stream
    return tables


def _classified_lines(spark: SparkSession, source: SourceConfig, packages: list[LoadPackage],
                      dropped: dict[str, list[str]]) -> DataFrame:
    """The lines of every package, classified by the source's input kind, with their load ID, without the
    records of the `dropped` streams of each load (streams this pass leaves out)."""
    kind = source_input(source)
    frames = [without_streams(kind.classify(spark, p), dropped[p.load_id]).withColumn(R.LOAD_ID, F.lit(p.load_id))
              for p in packages]
    return union_all(frames)


def _count_lines(packages: list[LoadPackage], lines: DataFrame, streams: list[str]) -> dict[str, _Counts]:
    """One pass over the packages (this is where unreadable files surface, before any commit)."""
    agg = lines.groupBy(R.LOAD_ID, R.KIND, R.STREAM).agg(
        F.count(F.lit(1)).alias("n"), F.count(R.ERROR).alias("bad"),
        F.count_if(read_from_variant(lines, streams)).alias("from_variant"),
        F.collect_list(R.STATE_JSON).alias("states"))
    try:
        rows = agg.collect()  # a handful of (load, kind, stream) counters: metadata, not data
    except Exception as exc:
        error = next(filter(None, (unreadable_file(p, exc) for p in packages)), None)
        if error is None:
            raise
        raise error from None
    return {p.load_id: _package_counts(p, [r for r in rows if r[R.LOAD_ID] == p.load_id]) for p in packages}


def _package_counts(package: LoadPackage, rows: list) -> _Counts:
    records = {r[R.STREAM]: r for r in rows if r[R.KIND] == "record"}
    unknown = sorted(set(records) - set(package.streams))
    if unknown:
        raise PackageError(package.load_id, f"RECORD messages for stream {unknown[0]!r}, which the "
                                             f"manifest does not list (streams: {', '.join(package.streams)})")
    return _Counts(
        lines={s: r["n"] for s, r in records.items()},
        rejected={s: r["bad"] for s, r in records.items()},
        quarantined=sum(r["n"] for r in rows if r[R.KIND] == "quarantine"),
        states=[s for r in rows if r[R.KIND] == "state" for s in r["states"]],
        from_variant={s: r["from_variant"] for s, r in records.items()},
    )


def _write_quarantine(spark: SparkSession, tables: SourceTables, packages: list[LoadPackage], lines: DataFrame,
                      quarantined: int, some_streams: bool) -> None:
    """Lines of no stream (not an Airbyte message) are kept per source, never dropped; a pass over some
    streams rewrites the lines of the files it read only."""
    names, path = tables.names, tables.quarantine_path
    if quarantined == 0 and not is_delta_table(spark, path):
        return
    rows = R.raw_rows(lines.where(F.col(R.KIND) == "quarantine"), names)
    if some_streams:
        replace_where(rows, path, quarantine_predicate(names.load_id, names.file, packages))
    else:
        replace_loads(rows, path, names.load_id, [p.load_id for p in packages])


def _register(spark: SparkSession, tables: SourceTables, packages: list[LoadPackage], results: list[LoadResult],
              counts: dict[str, _Counts], wholes: list[LoadPackage], streams: Sequence[str] | None,
              checksums: Callable[[str], dict[str, str | None]]) -> dict[str, int]:
    """Registry (and ledger, dlt's loads) rows of the pass's loads; the newest version the pass gave each table."""
    source = tables.source
    records = with_table_versions(spark, tables, _load_records(source, packages, results, counts))
    complete, complete_records = [p.load_id for p in packages], records
    if streams is not None:  # a load is complete once every stream of its whole package is registered
        registered = normalized_streams(spark, tables.registry_path, [p.load_id for p in packages])
        complete, complete_records = complete_loads(wholes, records, registered)
    if tables.names.dlt_system_tables and complete:  # (before the registry, which marks the loads done)
        record_dlt_loads(spark, tables.loads_path, complete_records)
    record_loads(spark, tables.registry_path, [p.load_id for p in packages], records,
                 None if streams is None else list(streams))
    if source_input(source).uses_ledger:  # after the registry: a crash in between re-runs the same load ID
        for package in wholes:
            if package.load_id in complete:
                record_files(spark, ledger_path(tables.config, source), package.load_id, package.entries,
                             checksums(package.load_id))
    publish_tables(spark, tables)  # (after the registry: snapshot views read the loads it completed)
    newest: dict[str, int] = {}
    for record in records:
        for table, version in record.table_versions.items():
            newest[table] = max(version, newest.get(table, version))
    return newest


def _load_records(source: SourceConfig, packages: list[LoadPackage], results: list[LoadResult],
                  counts: dict[str, _Counts]) -> list[LoadRecord]:
    now = datetime.now(timezone.utc)
    records = []
    for package, result in zip(packages, results):
        states = counts[package.load_id].states
        state = package.state if package.state is not None else ([json.loads(s) for s in states] or None)
        records += [
            LoadRecord(
                source=source.name, stream=s.stream, load_id=package.load_id,
                created_at=package.created_at, normalized_at=now,
                status=C.STATUS_NORMALIZED, rows={s.raw_table: s.raw_lines, **s.typed_rows},
                raw_lines=s.raw_lines, rejected_lines=s.rejected_lines,
                discarded_rows={t: d.rows for t, d in s.discarded.items() if d.rows},
                discarded_values={t: d.values for t, d in s.discarded.items() if d.values},
                schema_version_hash=s.schema_version_hash,
                state=None if state is None else json.dumps(state, sort_keys=True),
            )
            for s in result.streams.values()
        ]
    return records
