"""Table statistics from Delta metadata, and table maintenance (OPTIMIZE, VACUUM)."""
from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from delta.tables import DeltaTable
from pyspark.sql import SparkSession
from pyspark.sql import types as T

from normalization_core.io.delta import is_delta_table, with_conflict_retry


def table_row_count(spark: SparkSession, path: str) -> int:
    """Rows in the table now, answered from the log's per-file `numRecords` stats.

    Delta's metadata-only query rule (`optimizeMetadataQuery`) turns an unfiltered count into a
    local scan of the snapshot, so no data file is read.
    """
    return spark.read.format("delta").load(path).count()


def table_schema(spark: SparkSession, path: str) -> T.StructType:
    """The schema of the table's current snapshot (from the log)."""
    return DeltaTable.forPath(spark, path).toDF().schema


@dataclass(frozen=True)
class MaintenanceResult:
    path: str
    files_removed: int
    files_added: int
    files_vacuumed: int


def optimize_and_vacuum(spark: SparkSession, path: str, retention_hours: float | None = None) -> MaintenanceResult:
    """Compact small files (OPTIMIZE), then delete files no version within the retention needs
    (VACUUM; None = the table's retention, 7 days by default). Each is its own commit."""
    table = DeltaTable.forPath(spark, path)
    metrics = with_conflict_retry(lambda: table.optimize().executeCompaction().select("metrics").first()[0], path)
    table.vacuum(retention_hours)  # runs eagerly; None = the table's retention
    vacuumed = _last_metric(table, "VACUUM END", "numDeletedFiles")
    return MaintenanceResult(path, int(metrics["numFilesRemoved"]), int(metrics["numFilesAdded"]), vacuumed)


def maintain_tables(spark: SparkSession, paths: Iterable[str],
                    retention_hours: float | None = None) -> list[MaintenanceResult]:
    """OPTIMIZE and VACUUM each existing Delta table of `paths`, several side by side (each is mostly
    fixed per-commit latency); missing tables are skipped. Results in the order of `paths`."""
    existing = [p for p in paths if is_delta_table(spark, p)]
    with ThreadPoolExecutor(max_workers=4, thread_name_prefix="lakenorm-maintain") as pool:
        return list(pool.map(lambda path: optimize_and_vacuum(spark, path, retention_hours), existing))


def _last_metric(table: DeltaTable, operation: str, metric: str) -> int:
    """A metric of the newest commit of `operation` (commit info: metadata, not data)."""
    row = table.history(5).where(f"operation = '{operation}'").select("operationMetrics").first()
    return int(((row[0] or {}) if row else {}).get(metric, 0))
