"""The code location: Definitions merged from the per-source factories."""
from __future__ import annotations

import os
from pathlib import Path

import dagster as dg

from normalization_core.api import CONFIG_ENV, DEFAULT_CONFIG_FILE, LakenormConfig, load_config
from pipeline_assets.factories import build_source_definitions
from pipeline_assets.resources import SparkSessionResource

DEMO_CONFIG = Path(".lakenorm") / "lakenorm.yaml"


def build_definitions(config: LakenormConfig) -> dg.Definitions:
    per_source = [build_source_definitions(config, source) for source in config.sources]
    shared = dg.Definitions(resources={"spark": SparkSessionResource(spark_conf=config.spark)})
    return dg.Definitions.merge(*per_source, shared)


def config_path() -> Path | None:
    """$LAKENORM_CONFIG, ./lakenorm.yaml, or the demo's configuration; None lets load_config explain."""
    if os.environ.get(CONFIG_ENV):
        return Path(os.environ[CONFIG_ENV])
    for candidate in (Path(DEFAULT_CONFIG_FILE), DEMO_CONFIG):
        if candidate.is_file():
            return candidate
    return None


@dg.definitions
def defs() -> dg.Definitions:
    """Loaded by `dagster dev` / the daemon; the configuration is read when the location loads."""
    return build_definitions(load_config(config_path()))
