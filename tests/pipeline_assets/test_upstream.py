"""Upstream lineage (SPEC §8): a dagster-dlt asset produces the landing lakenorm reads (dlt's extracted packages,
`input: dlt_extract`). In one Definitions, lakenorm's raw table depends on it (`upstream` in the configuration),
so the lineage runs from the extractor's asset to every lakenorm table; materializing the dlt asset, then
lakenorm's, puts the dlt rows in the tables, under a translator's keys that the run's metadata and column lineage
follow."""
from __future__ import annotations

import os

import dagster as dg
import pytest

from normalization_core.configuration.config import LakenormConfig, parse_config
from normalization_core.io.delta import read_table
from normalization_core.plans.source_tables import SourceTables
from normalization_core.plans.stream_plans import stream_plans
from pipeline_assets.definitions import build_definitions
from pipeline_assets.factories import typed_table_metadata
from pipeline_assets.translator import LakenormTableProps, LakenormTranslator, TableKeys

dlt = pytest.importorskip("dlt")
dagster_dlt = pytest.importorskip("dagster_dlt")
os.environ.setdefault("RUNTIME__DLTHUB_TELEMETRY", "false")
ISSUES = [{"id": 1, "title": "crash", "labels": [{"name": "bug"}, {"name": "p1"}]}, {"id": 2, "title": "docs"}]
EXTRACTED = dg.AssetKey("dlt_github_issues")  # dagster-dlt's default key: dlt_<source>_<resource>


@dlt.source(name="github")
def github():
    @dlt.resource(name="issues", primary_key="id", write_disposition="append")
    def issues():
        yield ISSUES

    return issues


class LakeTranslator(LakenormTranslator):
    def get_asset_spec(self, props: LakenormTableProps) -> dg.AssetSpec:
        spec = super().get_asset_spec(props)
        return spec.replace_attributes(key=spec.key.with_prefix("lake"))


def extract_assets(pipeline) -> dg.AssetsDefinition:
    """dagster-dlt's assets of the source, whose run extracts it (`pipeline.extract()`: the packages lakenorm
    normalizes, instead of dlt's own normalize and load)."""

    @dagster_dlt.dlt_assets(dlt_source=github(), dlt_pipeline=pipeline, name="github_extract")
    def extracted(context):  # (annotations are text here: Dagster wants the class or none)
        pipeline.extract(github())
        for key in sorted(context.selected_asset_keys):
            yield dg.MaterializeResult(asset_key=key)

    return extracted


def project(tmp_path, pipeline) -> tuple[dg.Definitions, LakenormConfig]:
    """The project's code location, loaded as Dagster does: the dlt assets and lakenorm's, in one Definitions."""
    landing = tmp_path / "pipes" / "github" / "normalize" / "extracted"
    landing.mkdir(parents=True, exist_ok=True)
    config = parse_config({"warehouse": "wh", "sources": [{
        "name": "github", "landing": str(landing), "input": "dlt_extract", "convention": "dlt", "settle_seconds": 0,
        "streams": {"issues": {"upstream": ["dlt_github_issues"]}}}]}, base_dir=tmp_path)
    return dg.Definitions.merge(dg.Definitions(assets=[extract_assets(pipeline)]),
                                build_definitions(config, translator=LakeTranslator())), config


def test_lineage_runs_from_a_dlt_asset_to_every_lakenorm_table(spark, tmp_path):
    pipeline = dlt.pipeline(pipeline_name="github", pipelines_dir=str(tmp_path / "pipes"), dataset_name="github")
    defs, config = project(tmp_path, pipeline)
    raw = dg.AssetKey(["lake", "github", "_dlt_raw_issues"])
    assert defs.resolve_asset_graph().get(raw).parent_keys == {EXTRACTED}
    with dg.instance_for_test() as instance:
        assert defs.resolve_implicit_global_asset_job_def().execute_in_process(
            instance=instance, asset_selection=[EXTRACTED]).success
        tick = defs.resolve_sensor_def("github_landing_sensor")(
            dg.build_sensor_context(instance=instance, definitions=defs))
        [load_id] = [r.partition_key for r in tick.run_requests]
        instance.add_dynamic_partitions("github_load_ids", [load_id])
        run = defs.resolve_job_def("github_normalize").execute_in_process(instance=instance, partition_key=load_id)

    rows = read_table(spark, config.table_path("github", "issues")).orderBy("id").collect()
    assert [(r.id, r.title) for r in rows] == [(1, "crash"), (2, "docs")]
    labels = read_table(spark, config.table_path("github", "issues__labels")).collect()
    assert sorted(r.name for r in labels) == ["bug", "p1"]
    [materialized] = run.get_asset_materialization_events()  # the stream's tables are inferred by its first load
    assert (materialized.asset_key, materialized.materialization.metadata["rows_written"].value) == (raw, 2)
    assert materialized.materialization.metadata["delta_version"].value >= 0

    defs = project(tmp_path, pipeline)[0]  # loaded again: with the tables the first load inferred
    graph = defs.resolve_asset_graph()
    tables = {k for k in graph.get_all_asset_keys() if k.path[:2] == ["lake", "github"] and not
              graph.get(k).is_observable}
    assert {k.path[-1] for k in tables} == {"_dlt_raw_issues", "issues", "issues__labels"}
    assert dg.AssetSelection.assets(EXTRACTED).downstream().resolve(graph) == tables | {EXTRACTED}
    source = config.source("github")
    keys = TableKeys("github", {spec.metadata["lakenorm/table"]: spec.key
                                for spec in defs.resolve_assets_def(raw).specs})
    described = typed_table_metadata(spark, SourceTables(config, source), stream_plans(
        source, stored_in=SourceTables(config, source))["issues"], "issues__labels", keys)  # what a run reports
    lineage = described["dagster/column_lineage"].deps_by_column
    assert [(d.asset_key, d.column_name) for d in lineage["name"]] == [(raw, "_dlt_data")]
    assert {d.asset_key for deps in lineage.values() for d in deps} == {raw, dg.AssetKey(["lake", "github", "issues"])}
