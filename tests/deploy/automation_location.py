"""A code location as a user's project holds one: an extractor's asset that lands load packages, and lakenorm's
definitions of the configuration in $LAKENORM_CONFIG, whose source `auto` names the extractor as its upstream.
(No postponed annotations: Dagster reads the asset's config class from its annotation.)"""
import dagster as dg

from lakenorm_app.demo import land_missing_packages
from lakenorm_app.samples import SampleSpec
from normalization_core.api import load_config
from pipeline_assets.definitions import build_definitions

UPSTREAM = ["extract", "auto"]


class Extract(dg.Config):
    packages: int
    """How many packages the landing holds afterwards (the missing ones are landed)."""


@dg.asset(key=UPSTREAM)
def extract(config: Extract) -> None:
    land_missing_packages(load_config().source("auto").landing,
                          SampleSpec(packages=config.packages, orders=5, customers=3, events=4, source="auto"))


@dg.definitions
def defs() -> dg.Definitions:
    return dg.Definitions.merge(build_definitions(load_config()), dg.Definitions(assets=[extract]))
