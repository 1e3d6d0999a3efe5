"""lakenorm as a Dagster Component: a `defs.yaml` in a project's `defs/` folder names the configuration file
and how the tables' assets fit the project (key prefix, group, owners, tags, automation, `translation`).

    type: pipeline_assets.component.LakenormComponent
    attributes:
      config_file: lakenorm.yaml
      key_prefix: lake
      owners: ["team:data"]

(No `from __future__ import annotations`: Dagster reads the fields' annotations as types.)
"""
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import dagster as dg
from pydantic import BaseModel, ConfigDict, PrivateAttr

from normalization_core.api import load_config
from pipeline_assets.definitions import DEMO_CONFIG, build_definitions
from pipeline_assets.scaffolder import LakenormScaffolder
from pipeline_assets.translation import TRANSLATION_RESOLVER, Translation
from pipeline_assets.translator import LakenormTableProps, LakenormTranslator, default_spec_attributes


@dg.scaffold_with(LakenormScaffolder)
class LakenormComponent(dg.Component, dg.Resolvable, dg.Model):
    """Every table of a lakenorm configuration as an asset of the project, with its checks, jobs, landing
    sensors and schedules. The settings apply to every table in this order: the default translation
    (`LakenormTranslator`), `key_prefix`, `group_name`, `owners`, `tags`, `automation_condition` (stream tables
    only: the system tables are observed), then `translation`. Subclasses may override `get_asset_spec`."""

    model_config = ConfigDict(arbitrary_types_allowed=True)  # the resolved automation condition
    _declared: Any = PrivateAttr(default=None)
    config_file: Annotated[str | None, dg.Resolver.default(
        description="The lakenorm.yaml, relative to this defs.yaml's folder; by default $LAKENORM_CONFIG, "
                    "./lakenorm.yaml or the demo's .lakenorm/lakenorm.yaml.",
        examples=["lakenorm.yaml", "{{ env.LAKENORM_CONFIG }}"])] = None
    key_prefix: Annotated[str | Sequence[str] | None, dg.Resolver.default(
        description="Put before every table's key: `lake` makes `[shop, orders]` `[lake, shop, orders]`.",
        examples=["lake", ["lake", "bronze"]])] = None
    group_name: Annotated[str | None, dg.Resolver.default(
        description="The asset group of every table (default: the source's name).")] = None
    owners: Annotated[Sequence[str] | None, dg.Resolver.default(
        description="Owners of every table: emails or `team:<name>`.", examples=[["team:data"]])] = None
    tags: Annotated[Mapping[str, str] | None, dg.Resolver.default(
        description="Tags added to every table's.", examples=[{"domain": "shop"}])] = None
    automation_condition: Annotated[dg.AutomationCondition | None, dg.Resolver.default(
        model_field_type=str | None,  # a template: "{{ dg.AutomationCondition.eager() }}"
        description="Declarative Automation of every stream table.",
        examples=["{{ dg.AutomationCondition.eager() }}"])] = None
    translation: Annotated[Translation | None, TRANSLATION_RESOLVER] = None
    """AssetSpec attributes per table, templated with `{{ props.source }}`, `{{ props.stream }}`,
    `{{ props.table }}`, `{{ props.kind }}`, `{{ props.location }}` and `{{ spec }}` (the spec so far)."""

    @classmethod
    def load(cls, attributes: BaseModel | None, context: dg.ComponentLoadContext) -> "LakenormComponent":
        component = super().load(attributes, context)
        component._declared = (None if attributes is None else attributes.model_dump(), context.path)
        return component

    def __eq__(self, other: object) -> bool:
        """Components declared alike (the same `defs.yaml` attributes in the same folder) are equal, whatever
        their resolved `translation` function: a code location loaded again reuses its Definitions."""
        if self._declared is None or not isinstance(other, LakenormComponent):
            return super().__eq__(other)
        return type(self) is type(other) and self._declared == other._declared

    __hash__ = None  # type: ignore[assignment]

    def get_asset_spec(self, props: LakenormTableProps) -> dg.AssetSpec:
        """The table's spec from the default translation and the component's settings (before `translation`)."""
        spec = default_spec_attributes(props)
        settings = {"key": dg.AssetKey(spec["key"]).with_prefix(self.key_prefix) if self.key_prefix else None,
                    "group_name": self.group_name, "owners": self.owners,
                    "tags": {**spec.get("tags", {}), **self.tags} if self.tags else None,
                    "automation_condition": None if props.kind == "system" else self.automation_condition}
        return dg.AssetSpec(**{**spec, **{name: value for name, value in settings.items() if value is not None}})

    def config_path(self, context: dg.ComponentLoadContext) -> Path | None:
        return None if self.config_file is None else context.path / self.config_file

    def build_defs(self, context: dg.ComponentLoadContext) -> dg.Definitions:
        config = load_config(self.config_path(context), fallbacks=[DEMO_CONFIG])
        return build_definitions(config, ComponentTranslator(self), executor=None)  # the project's own


class ComponentTranslator(LakenormTranslator):
    """The component's `get_asset_spec`, then its `translation`."""

    def __init__(self, component: LakenormComponent) -> None:
        self.component = component

    def get_asset_spec(self, props: LakenormTableProps) -> dg.AssetSpec:
        spec = self.component.get_asset_spec(props)
        translation = self.component.translation
        return spec if translation is None else translation(spec, props)
