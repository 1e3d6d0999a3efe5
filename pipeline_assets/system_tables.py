"""The registry and schema versions tables as observable source assets; the rebuild-from-raw job.

(No `from __future__ import annotations`: Dagster reads the op's config annotation as a class.)
"""

import warnings
from collections.abc import Iterator
from pathlib import Path

import dagster as dg

from normalization_core.api import SourceConfig, SourceTables, is_uri, logged_version_and_rows, rebuild_source_stream
from pipeline_assets.resources import SparkSessionResource
from pipeline_assets.translator import TableKeys


def system_table_assets(specs: list[dg.AssetSpec], tables: SourceTables) -> dg.AssetsDefinition:
    """`_norm_loads` (registry), `_norm_versions` (schema versions) and, under dlt, `_dlt_stream_loads`
    (`system_asset_specs`): observed with delta-rs (no JVM): the Delta version is the data version, with the
    row count."""
    paths = {spec.key: tables.path(spec.metadata["lakenorm/table"]) for spec in specs}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.BetaWarning)  # observable source assets are Beta in Dagster 1.13

        @dg.multi_observable_source_asset(name=f"{tables.source.name}_system_tables", specs=specs, can_subset=True)
        def observe(context: dg.AssetExecutionContext) -> Iterator[dg.ObserveResult]:
            for key in context.selected_asset_keys:  # the store's credentials as the environment holds them now
                path = paths[key]
                yield dg.ObserveResult(asset_key=key, **delta_table_state(path, tables.storage_options(path)))

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


def observe_job(source: SourceConfig, assets: dg.AssetsDefinition):
    return dg.define_asset_job(f"{source.name}_observe_system_tables", selection=dg.AssetSelection.assets(assets),
                               executor_def=dg.in_process_executor,
                               description=f"Observe the registry and versions tables of source {source.name!r}.")


class RebuildConfig(dg.Config):
    """Streams to rebuild; empty: every stream of the source with typed tables."""

    streams: list[str] = []


def rebuild_job(tables: SourceTables, streams: list[str], keys: TableKeys | None = None) -> dg.JobDefinition:
    """`lakenorm rebuild` from the UI: replaces each stream's typed tables with what its raw rows give
    (one observation per rebuilt table with its rows, on the table's asset `keys`; the tables are whole-table
    rewrites, not loads)."""
    source = tables.source
    key = keys or TableKeys(source.name)

    @dg.op(name=f"{source.name}_rebuild_from_raw", out={})
    def rebuild(context: dg.OpExecutionContext, config: RebuildConfig, spark: SparkSessionResource):
        for stream in config.streams or streams:
            counts = rebuild_source_stream(spark.spark, tables, stream)
            context.log.info(f"rebuilt stream {stream!r}: {counts}")
            for table, rows in counts.items():
                yield dg.AssetObservation(asset_key=key(table),
                                          metadata={"rebuilt_from_raw": True, "dagster/row_count": rows})

    @dg.job(name=f"{source.name}_rebuild", description=f"Rebuild streams of source {source.name!r} from raw.",
            executor_def=dg.in_process_executor)
    def job():
        rebuild()

    return job
