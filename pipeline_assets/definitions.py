"""The code location: Definitions merged from the per-source factories (the plain-Python way; the Dagster
Component is `pipeline_assets.component.LakenormComponent`)."""
from __future__ import annotations

from functools import cache
from pathlib import Path

import dagster as dg

from normalization_core.api import LakenormConfig, SourceConfig, SourceTables, known_streams, load_config, stream_plans
from pipeline_assets.factories import build_source_definitions
from pipeline_assets.resources import SparkSessionResource
from pipeline_assets.specs import spec_tables, unique_keys
from pipeline_assets.translator import LakenormTranslator

DEMO_CONFIG = Path(".lakenorm") / "lakenorm.yaml"


def source_definitions(config: LakenormConfig, source: SourceConfig, translator: LakenormTranslator | None
                       ) -> dg.Definitions:
    """`build_source_definitions`, or the ones last built for the source when what they are built from is equal
    (the configuration, the source's streams and plans, the translator): Dagster builds a code location's
    definitions twice when it loads it (to find them, then its repository), and a large one costs seconds."""
    streams = known_streams(config, source)
    plans = stream_plans(source, stored_in=SourceTables(config, source)) if streams else {}
    inputs = (config, streams, plans, translator)
    last = _BUILT.get(source.name)
    if last is None or last[0] != inputs:
        last = _BUILT[source.name] = inputs, build_source_definitions(config, source, translator, streams, plans)
    return last[1]


_BUILT: dict[str, tuple[tuple, dg.Definitions]] = {}
"""Per source name, what its Definitions were last built from, and them."""


def build_definitions(config: LakenormConfig, translator: LakenormTranslator | None = None,
                      executor: dg.ExecutorDefinition | None = dg.in_process_executor) -> dg.Definitions:
    """Every source's assets (as `translator` makes them), checks, jobs, sensors and schedules, and the `spark`
    resource. `executor`: of runs that select assets outside lakenorm's jobs (which name their own); None to
    merge into a project that has its own."""
    per_source = [source_definitions(config, source, translator) for source in config.sources]
    unique_keys(spec_tables(spec for d in per_source for assets in d.assets or () for spec in assets.specs))
    # In-process by default: each job is one step (a source's tables are one multi-asset), and a step process of
    # its own would import and load the code location again (~5 s) before starting its JVM. A selection of
    # several sources' assets shares the run's one Spark session instead of a JVM per step.
    return dg.Definitions.merge(*per_source, dg.Definitions(resources={"spark": spark_resource(config.spark)},
                                                            executor=executor))


def spark_resource(spark_conf: dict[str, str]) -> SparkSessionResource:
    """One resource object per Spark configuration: Definitions built twice from one configuration merge."""
    return _spark_resource(tuple(sorted(spark_conf.items())))


@cache
def _spark_resource(conf: tuple[tuple[str, str], ...]) -> SparkSessionResource:
    return SparkSessionResource(spark_conf=dict(conf))


@dg.definitions
def defs() -> dg.Definitions:
    """Loaded by `dagster dev` / the daemon; the configuration ($LAKENORM_CONFIG, ./lakenorm.yaml, or the
    demo's) is read when the location loads."""
    return build_definitions(load_config(fallbacks=[DEMO_CONFIG]))
