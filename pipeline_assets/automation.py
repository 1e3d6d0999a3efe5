"""Declarative Automation of a source (`automation: on_upstream`): the landing sensor registers new loads as
partitions, and Dagster's automation runs them once the source's upstream assets have materialized."""
from __future__ import annotations

from collections.abc import Iterable

import dagster as dg

from normalization_core.api import SourceConfig

AUTOMATION_INTERVAL_SECONDS = 30


def new_load_condition() -> dg.AutomationCondition:
    """A partition is requested once, after it is added (a new load, registered by the landing sensor), when none of
    the asset's dependencies is missing (the upstream assets materialized at least once; the source's own tables
    are requested with it) or in progress (an extractor still writing), and it is not in progress itself.

    Not `eager()`: an upstream asset without partitions maps onto every partition, so each of its materializations
    would normalize every load again. A load that fails is not requested again (its partition shows the failure).
    Partitions added before the condition's first evaluation are not requested: backfill them."""
    return (dg.AutomationCondition.on_missing() & ~dg.AutomationCondition.any_deps_in_progress()
            & ~dg.AutomationCondition.in_progress()).with_label("new load, upstream materialized and not running")


def source_automation(spec: dg.AssetSpec, source: SourceConfig) -> dict[str, dg.AutomationCondition]:
    """The automation condition a stream table's spec gets after the translator: under `on_upstream`, the source's
    (`new_load_condition`), unless the translator (or the component's `automation_condition`) set one, which wins
    and is evaluated by the source's automation sensor in its place. Nothing when the landing sensor asks for the
    runs: a translator's condition is then left to Dagster's default automation sensor."""
    if source.automation != "on_upstream" or spec.automation_condition is not None:
        return {}
    return {"automation_condition": new_load_condition()}


def build_automation_sensor(source: SourceConfig, keys: Iterable[dg.AssetKey]
                            ) -> dg.AutomationConditionSensorDefinition:
    """The source's automation condition sensor, running by default (Dagster's default one is stopped). A tick that
    requests several partitions is one backfill, run as ranges of at most `max_loads_per_run` partitions."""
    return dg.AutomationConditionSensorDefinition(
        f"{source.name}_automation", target=dg.AssetSelection.assets(*keys),
        default_status=dg.DefaultSensorStatus.RUNNING, minimum_interval_seconds=AUTOMATION_INTERVAL_SECONDS,
        description=f"Materializes new loads of source {source.name!r} once its upstream assets have materialized.")
