"""The code location: Definitions merged from the per-source factories."""
from __future__ import annotations

from pathlib import Path

import dagster as dg

from normalization_core.api import LakenormConfig, load_config
from pipeline_assets.factories import build_source_definitions
from pipeline_assets.resources import SparkSessionResource

DEMO_CONFIG = Path(".lakenorm") / "lakenorm.yaml"


def build_definitions(config: LakenormConfig) -> dg.Definitions:
    per_source = [build_source_definitions(config, source) for source in config.sources]
    # Steps run in the run's own process: each job is one step (a source's tables are one multi-asset), and a
    # step process of its own would import and load the code location again (~5 s) before starting its JVM.
    # A selection of several sources' assets shares the run's one Spark session instead of a JVM per step.
    shared = dg.Definitions(resources={"spark": SparkSessionResource(spark_conf=config.spark)},
                            executor=dg.in_process_executor)
    return dg.Definitions.merge(*per_source, shared)


@dg.definitions
def defs() -> dg.Definitions:
    """Loaded by `dagster dev` / the daemon; the configuration ($LAKENORM_CONFIG, ./lakenorm.yaml, or the
    demo's) is read when the location loads."""
    return build_definitions(load_config(fallbacks=[DEMO_CONFIG]))
