"""The registry and schema versions tables as observable source assets; the rebuild-from-raw job.

(No `from __future__ import annotations`: Dagster reads the op's config annotation as a class.)
"""

import warnings
from pathlib import Path

import dagster as dg

from normalization_core.api import (
    LakenormConfig,
    SourceConfig,
    SourceTables,
    catalog_table_name,
    is_uri,
    logged_version_and_rows,
    rebuild_source_stream,
)
from pipeline_assets.resources import SparkSessionResource


def system_table_assets(config: LakenormConfig, source: SourceConfig) -> list[dg.AssetsDefinition | dg.SourceAsset]:
    """`_norm_loads` (registry), `_norm_versions` (schema versions) and, under dlt, `_dlt_stream_loads`:
    observed with delta-rs (no JVM): the Delta version is the data version, with the row count."""
    names = SourceTables(config, source).names
    tables = {names.loads_table: "Load registry: one row per normalized load and stream (SPEC §3).",
              names.versions_table: "Schema versions: one row per stream schema version (SPEC §3)."}
    if names.stream_loads_table:
        tables[names.loads_table] = "dlt's load table: one row per complete load (status 0)."
        tables[names.stream_loads_table] = "Load registry: one row per normalized load and stream (SPEC §3)."
    return [_observed(config, source, table, description) for table, description in tables.items()]


def _observed(config: LakenormConfig, source: SourceConfig, table: str, description: str
              ) -> dg.AssetsDefinition | dg.SourceAsset:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.BetaWarning)  # observable_source_asset is Beta in Dagster 1.13
        return _observable(SourceTables(config, source), table, description)


def _observable(tables: SourceTables, table: str, description: str) -> dg.AssetsDefinition | dg.SourceAsset:
    path, source = tables.path(table), tables.source

    @dg.observable_source_asset(key=[source.name, table], group_name=source.name, description=description,
                                metadata={"dagster/table_name": catalog_table_name(source, table), "dagster/uri": path},
                                kinds={"delta"})
    def observe() -> dg.ObserveResult:  # the store's credentials as the environment holds them now
        return dg.ObserveResult(**delta_table_state(path, tables.storage_options(path)))

    return observe


def delta_table_state(path: str, storage_options: dict[str, str] | None = None) -> dict:
    """Data version (the Delta table version) and row count of a table, from its log; `absent` if missing."""
    if not is_uri(path) and not Path(path, "_delta_log").is_dir():
        return {"data_version": dg.DataVersion("absent"), "metadata": {"dagster/row_count": 0}}
    logged = logged_version_and_rows(path, storage_options)
    if logged is None:  # a store delta-rs cannot read
        return {"metadata": {"dagster/uri": path}}
    version, rows = logged
    return {"data_version": dg.DataVersion(str(version)),
            "metadata": {} if rows is None else {"dagster/row_count": rows}}


def observe_job(source: SourceConfig, assets: list[dg.AssetsDefinition | dg.SourceAsset]):
    keys = [a.key for a in assets]
    return dg.define_asset_job(f"{source.name}_observe_system_tables", selection=dg.AssetSelection.assets(*keys),
                               description=f"Observe the registry and versions tables of source {source.name!r}.")


class RebuildConfig(dg.Config):
    """Streams to rebuild; empty: every stream of the source with typed tables."""

    streams: list[str] = []


def rebuild_job(tables: SourceTables, streams: list[str]) -> dg.JobDefinition:
    """`lakenorm rebuild` from the UI: replaces each stream's typed tables with what its raw rows give
    (one observation per rebuilt table with its rows; the tables are whole-table rewrites, not loads)."""
    source = tables.source

    @dg.op(name=f"{source.name}_rebuild_from_raw", out={})
    def rebuild(context: dg.OpExecutionContext, config: RebuildConfig, spark: SparkSessionResource):
        for stream in config.streams or streams:
            counts = rebuild_source_stream(spark.spark, tables, stream)
            context.log.info(f"rebuilt stream {stream!r}: {counts}")
            for table, rows in counts.items():
                yield dg.AssetObservation(asset_key=[source.name, table],
                                          metadata={"rebuilt_from_raw": True, "dagster/row_count": rows})

    @dg.job(name=f"{source.name}_rebuild", description=f"Rebuild streams of source {source.name!r} from raw.")
    def job():
        rebuild()

    return job
