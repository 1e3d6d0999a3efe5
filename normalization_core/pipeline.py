"""Normalizing one load package of one source: read once, write each table atomically."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import partial

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from normalization_core import columns as C
from normalization_core.columns import SystemNames, system_names
from normalization_core.config import LakenormConfig, SourceConfig
from normalization_core.errors import PackageError, UnknownLoadError
from normalization_core.io.delta import is_delta_table, replace_load, run_concurrently
from normalization_core.io.packages import Discovery, LoadPackage, discover_packages, find_package
from normalization_core.io.reader import read_package_lines, unreadable_file
from normalization_core.io.registry import LoadRecord, is_newest_load, normalized_load_ids, record_loads
from normalization_core.naming import get_convention
from normalization_core.transform import raw as R
from normalization_core.transform.counts import NulledCounts
from normalization_core.typed_load import StreamPlan, load_plans, write_typed_tables


@dataclass(frozen=True)
class StreamResult:
    stream: str
    raw_table: str
    raw_lines: int
    rejected_lines: int
    expected_records: int | None = None
    typed_rows: dict[str, int] = field(default_factory=dict)
    """Rows written per typed table (root and children) of this load."""
    schema_version_hash: str | None = None
    nulled: dict[str, NulledCounts] = field(default_factory=dict)
    """NULLED values and rows per typed table written from this load."""


@dataclass(frozen=True)
class LoadResult:
    source: str
    load_id: str
    streams: dict[str, StreamResult] = field(default_factory=dict)
    quarantined_lines: int = 0


@dataclass(frozen=True)
class _Counts:
    """Per-stream line counts of one package, aggregated on the executors."""

    lines: dict[str, int]
    rejected: dict[str, int]
    quarantined: int
    states: list[str]


def raw_table_name(source: SourceConfig, stream: str) -> str:
    """The raw table of a stream under the source's convention (`_norm_raw_<stream>`)."""
    table = get_convention(source.convention, source.max_identifier_length).normalize_table_name(stream)
    return system_names(source.convention).raw_table(table)


def known_streams(source: SourceConfig, catalog_streams: list[str]) -> list[str]:
    """Streams of the catalog, of the configuration's overrides and of the packages landed so far."""
    landed = {s for p in discover_packages(source.landing, source.name).packages for s in p.streams}
    return sorted(set(catalog_streams) | set(source.streams) | landed)


def pending_packages(spark: SparkSession, config: LakenormConfig, source: SourceConfig) -> Discovery:
    """Complete packages not yet normalized (plus the rejected ones), in arrival order."""
    found = discover_packages(source.landing, source.name)
    done = normalized_load_ids(spark, registry_path(config, source))
    return Discovery(tuple(p for p in found.packages if p.load_id not in done), found.rejected)


def registry_path(config: LakenormConfig, source: SourceConfig) -> str:
    return config.table_path(source.name, system_names(source.convention).loads_table)


def normalize_load(spark: SparkSession, config: LakenormConfig, source_name: str, load_id: str) -> LoadResult:
    """Normalize one load ID into the source's tables; running it again changes nothing."""
    source = config.source(source_name)
    package = find_package(source.landing, source.name, load_id)
    if package is None:
        raise UnknownLoadError(source.name, load_id, str(source.landing))
    names = system_names(source.convention)
    tables = _raw_tables(source, package)
    lines = _classified_lines(spark, package).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        counts = _count_lines(package, lines)
        writes = [partial(_write_raw, config, source, names, lines, load_id, s, t) for s, t in tables.items()]
        writes.append(partial(_write_quarantine, spark, config, source, names, package, lines, counts.quarantined))
        run_concurrently(writes)
        plans = load_plans(spark, config, source, package.streams, partial(_stream_rows, lines, names, load_id))
        nulled: dict[str, dict[str, NulledCounts]] = {}
        typed = _write_typed(spark, config, source, names, package, lines, plans, nulled)
    finally:
        lines.unpersist()
    result = LoadResult(source.name, load_id, {
        s: StreamResult(s, t, counts.lines.get(s, 0), counts.rejected.get(s, 0), package.expected_records.get(s),
                        typed.get(s, {}), plans[s].version_hash if s in plans else None, nulled.get(s, {}))
        for s, t in tables.items()}, counts.quarantined)
    _register(spark, config, source, package, result, counts)
    return result


def _write_raw(config: LakenormConfig, source: SourceConfig, names: SystemNames, lines: DataFrame,
               load_id: str, stream: str, table: str) -> None:
    replace_load(_stream_rows(lines, names, load_id, stream), config.table_path(source.name, table), names.load_id, load_id)


def _stream_rows(lines: DataFrame, names: SystemNames, load_id: str, stream: str, with_parsed: bool = False
                 ) -> DataFrame:
    stream_lines = lines.where((F.col(R.KIND) == "record") & (F.col(R.STREAM) == stream))
    return R.raw_rows(stream_lines, names, load_id, with_parsed)


def _write_typed(spark: SparkSession, config: LakenormConfig, source: SourceConfig, names: SystemNames,
                 package: LoadPackage, lines: DataFrame, plans: dict[str, StreamPlan],
                 nulled: dict[str, dict[str, NulledCounts]]) -> dict[str, dict[str, int]]:
    registry = registry_path(config, source)
    typed = {}
    for stream, plan in plans.items():
        if stream in package.streams:
            newest = is_newest_load(spark, registry, stream, package.arrival_key)
            rows = _stream_rows(lines, names, package.load_id, stream, with_parsed=True)
            typed[stream] = write_typed_tables(spark, config, source, names, plan, rows, package.load_id, newest,
                                               nulled.setdefault(stream, {}))
    return typed


def _raw_tables(source: SourceConfig, package: LoadPackage) -> dict[str, str]:
    tables = {stream: raw_table_name(source, stream) for stream in package.streams}
    seen: dict[str, str] = {}
    for stream, table in tables.items():
        if table.lower() in seen:
            raise PackageError(package.load_id, f"streams {seen[table.lower()]!r} and {stream!r} "
                                                f"both normalize to table {table!r}; rename one")
        seen[table.lower()] = stream
    return tables


def _classified_lines(spark: SparkSession, package: LoadPackage) -> DataFrame:
    lines = read_package_lines(spark, package)
    created = F.lit(package.created_at).cast("timestamp")
    if package.format == "airbyte":
        return R.airbyte_lines(lines, created)
    return R.record_lines(lines, created)


def _count_lines(package: LoadPackage, lines: DataFrame) -> _Counts:
    """One pass over the package (this is where unreadable files surface, before any commit)."""
    agg = lines.groupBy(R.KIND, R.STREAM).agg(
        F.count(F.lit(1)).alias("n"), F.count(R.ERROR).alias("bad"),
        F.collect_list(R.STATE_JSON).alias("states"))
    try:
        rows = agg.collect()  # a handful of (kind, stream) counters: metadata, not data
    except Exception as exc:
        error = unreadable_file(package, exc)
        if error is None:
            raise
        raise error from None
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
    )


def _write_quarantine(spark: SparkSession, config: LakenormConfig, source: SourceConfig, names: SystemNames,
                      package: LoadPackage, lines: DataFrame, quarantined: int) -> None:
    """Lines of no stream (not an Airbyte message) are kept per source, never dropped."""
    path = config.table_path(source.name, names.quarantine_table)
    if quarantined == 0 and not is_delta_table(spark, path):
        return
    rows = R.raw_rows(lines.where(F.col(R.KIND) == "quarantine"), names, package.load_id)
    replace_load(rows, path, names.load_id, package.load_id)


def _register(spark: SparkSession, config: LakenormConfig, source: SourceConfig, package: LoadPackage,
              result: LoadResult, counts: _Counts) -> None:
    now = datetime.now(timezone.utc)
    state = package.state if package.state is not None else ([json.loads(s) for s in counts.states] or None)
    records = [
        LoadRecord(
            source=source.name, stream=s.stream, load_id=package.load_id,
            created_at=package.created_at, normalized_at=now,
            status=C.STATUS_NORMALIZED, rows={s.raw_table: s.raw_lines, **s.typed_rows}, raw_lines=s.raw_lines,
            rejected_lines=s.rejected_lines, schema_version_hash=s.schema_version_hash,
            state=None if state is None else json.dumps(state, sort_keys=True),
        )
        for s in result.streams.values()
    ]
    record_loads(spark, registry_path(config, source), package.load_id, records)
