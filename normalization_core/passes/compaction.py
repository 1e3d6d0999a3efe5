"""The compaction that follows a pass (`io.compaction`): which of the tables it wrote are looked at, and how."""
from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import SparkSession

from normalization_core.inputs import source_input
from normalization_core.inputs.base import ledger_path
from normalization_core.io.compaction import compact_tables
from normalization_core.io.delta import table_rows
from normalization_core.io.table_versions import untagged_commits
from normalization_core.plans.source_tables import SourceTables
from normalization_core.plans.stream_plans import StreamPlan, key_ordered_tables, output_tables
from normalization_core.runtime.spark import large_rewrite_conf

LOOKED_AT_EVERY = 5
"""A table the pass committed to is looked at when that commit's version is a multiple of this (its log read from
storage costs a few requests on an object store): each load adds a file or two, so a table holds at most ~10 more
small files than the compaction's threshold. Tables whose version the pass does not know are looked at every time."""


def compact_written(spark: SparkSession, tables: SourceTables, raw: list[str], plans: Mapping[str, StreamPlan],
                    versions: Mapping[str, int]) -> None:
    """Compact the tables a pass wrote (its raw tables, its streams' tables and the source's system tables) that hold
    many small files, after the registry: a compaction is no part of any load (its commits carry no load ID), and a
    load is complete without it. `versions`: the version of the pass's commit to each table it knows."""
    names = tables.names
    key_orders = {tables.path(t): keys for plan in plans.values()
                  for t, keys in key_ordered_tables(plan, names).items()}
    written = [*raw, *(t for plan in plans.values() for t in output_tables(plan, names))]
    looked_at = [tables.path(t) for t in written if versions.get(t, 0) % LOOKED_AT_EVERY == 0]
    system = [tables.registry_path, tables.loads_path, tables.quarantine_path,
              *([ledger_path(tables.config, tables.source)] if source_input(tables.source).uses_ledger else [])]
    paths = [*looked_at, *system]
    rewritten = _most_rows(tables, [p for p in looked_at if p in key_orders])
    with untagged_commits(spark), large_rewrite_conf(spark, rewritten):
        compact_tables(spark, paths, key_orders, {p: tables.storage_options(p) for p in paths})


def key_ordered_rows(tables: SourceTables, plans: Mapping[str, StreamPlan]) -> int:
    """The rows of the largest table the streams keep in key order, which a load's key-range rewrite or a
    compaction may write again whole (from the tables' logs: no Spark job; 0 where unknown)."""
    return _most_rows(tables, [tables.path(t) for plan in plans.values()
                               for t in key_ordered_tables(plan, tables.names)])


def _most_rows(tables: SourceTables, paths: list[str]) -> int:
    return max((table_rows(p, tables.storage_options(p), object_store=True) or 0 for p in paths), default=0)
