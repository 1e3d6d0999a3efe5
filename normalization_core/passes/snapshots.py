"""Every table of a source as of one complete load (SPEC §11): the Delta versions the registry recorded.

A pass finds, before it writes the registry, the version of its own commit to each table (`io.table_versions`)
and records it in the registry row (`table_versions`). Since the registry is written last, a load's versions
become visible exactly when it completes. The snapshot of load L reads each table at the newest version recorded
by a load complete no later than L (by the registry's `normalized_at`): tables L wrote at L's commit or a later
complete load's, the others as the loads before L left them. Parent and child tables of one load are then read
from the same set of loads, whatever a load in flight has committed since.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from normalization_core import columns as C
from normalization_core.configuration.config import LakenormConfig
from normalization_core.errors import LakenormError
from normalization_core.io.delta import is_delta_table, read_table, run_concurrently
from normalization_core.io.registry import LoadRecord
from normalization_core.io.table_versions import committed_versions
from normalization_core.plans.source_tables import SourceTables

_AT = "completed_at"


@dataclass(frozen=True)
class Snapshot:
    """The tables of a source as of one complete load: the Delta version to read each at."""

    source: str
    load_id: str
    completed_at: datetime
    versions: dict[str, int]


def with_table_versions(spark: SparkSession, tables: SourceTables, records: list[LoadRecord]) -> list[LoadRecord]:
    """`records` with the version of their load's commit to each table they wrote (read from the tables'
    histories: a few small log reads, side by side)."""
    loads_of: dict[str, list[str]] = {}
    for record in records:
        for table in record.rows:
            loads_of.setdefault(table, []).append(record.load_id)
    found = run_concurrently([
        lambda t=t: committed_versions(spark, tables.path(t), loads_of[t], tables.storage_options(tables.path(t)))
        for t in loads_of], max_workers=8)
    by_table = dict(zip(loads_of, found))
    return [replace(r, table_versions={t: by_table[t][r.load_id] for t in r.rows if r.load_id in by_table[t]})
            for r in records]


def source_snapshot(spark: SparkSession, tables: SourceTables, load_id: str | None = None) -> Snapshot:
    """The snapshot of `load_id` (None: of the last complete load); a `LakenormError` when that load is not
    complete or no complete load recorded versions yet."""
    source, path = tables.source.name, tables.registry_path
    registry = read_table(spark, path) if is_delta_table(spark, path) else None
    if registry is None or C.LOADS_TABLE_VERSIONS not in registry.columns:
        raise LakenormError(f"source {source!r} has no load with recorded table versions yet: normalize a load first")
    loads = (registry.groupBy(C.LOADS_LOAD_ID)
             .agg(F.min(F.col(C.LOADS_STATUS) == C.STATUS_NORMALIZED).alias("ok"),
                  F.max(C.LOADS_NORMALIZED_AT).alias(_AT))
             .where("ok"))
    chosen = loads if load_id is None else loads.where(F.col(C.LOADS_LOAD_ID) == load_id)
    target = chosen.orderBy(F.desc(_AT), F.desc(C.LOADS_LOAD_ID)).limit(1).collect()  # one row: metadata
    if not target:
        which = "no load" if load_id is None else f"load {load_id!r} is not"
        raise LakenormError(f"{which} complete in the registry of source {source!r} (`lakenorm normalize` it)")
    completed_at = target[0][_AT]
    upto = loads.where(F.col(_AT) <= F.lit(completed_at)).select(C.LOADS_LOAD_ID)
    versions = (registry.join(upto, C.LOADS_LOAD_ID, "left_semi")
                .select(F.explode(C.LOADS_TABLE_VERSIONS).alias("table", "version"))
                .groupBy("table").agg(F.max("version").alias("version"))
                .collect())  # one row per table: metadata
    return Snapshot(source, target[0][C.LOADS_LOAD_ID], completed_at,
                    {row["table"]: int(row["version"]) for row in sorted(versions)})


def snapshot_versions(spark: SparkSession, config: LakenormConfig, source: str,
                      load_id: str | None = None) -> Snapshot:
    """`source_snapshot` of the source named `source`: per table, the Delta version a snapshot reads."""
    return source_snapshot(spark, SourceTables.of(config, source), load_id)


def read_snapshot(spark: SparkSession, config: LakenormConfig, source: str, table: str,
                  load_id: str | None = None) -> DataFrame:
    """The table as of load `load_id` (None: the last complete load), read `VERSION AS OF` the snapshot's
    version: tables read this way, with the same `load_id`, hold the same loads."""
    tables = SourceTables.of(config, source)
    snapshot = source_snapshot(spark, tables, load_id)
    return read_at(spark, tables, snapshot, table)


def read_at(spark: SparkSession, tables: SourceTables, snapshot: Snapshot, table: str) -> DataFrame:
    """`table` of a snapshot already looked up (several tables of one snapshot: look it up once)."""
    if table not in snapshot.versions:
        raise LakenormError(f"table {table!r} of source {snapshot.source!r} has no version in the snapshot of load "
                            f"{snapshot.load_id!r} (tables: {', '.join(snapshot.versions) or 'none'})")
    return spark.read.format("delta").option("versionAsOf", snapshot.versions[table]).load(tables.path(table))


def load_table_versions(spark: SparkSession, tables: SourceTables, load_ids: list[str]) -> dict[str, dict[str, int]]:
    """Per load ID, the Delta version of its commit to each table it wrote, as the registry recorded it (the
    loads' normalized streams; none for a load not registered)."""
    path = tables.registry_path
    if not load_ids or not is_delta_table(spark, path, tables.storage_options(path)):
        return {}
    registry = read_table(spark, path)
    if C.LOADS_TABLE_VERSIONS not in registry.columns:
        return {}
    rows = (registry.where(F.col(C.LOADS_LOAD_ID).isin(load_ids) & (F.col(C.LOADS_STATUS) == C.STATUS_NORMALIZED))
            .select(C.LOADS_LOAD_ID, C.LOADS_TABLE_VERSIONS).collect())  # one row per (load, stream): metadata
    found: dict[str, dict[str, int]] = {}
    for row in rows:
        found.setdefault(row[0], {}).update({t: int(v) for t, v in (row[1] or {}).items()})
    return found
