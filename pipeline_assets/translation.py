"""The component's `translation:` block, applied as Dagster's integration components apply theirs
(`TranslatorResolvingInfo`: `tags` and `metadata` added, the other attributes replaced, `key_prefix` put before the
key), with its attributes resolved once per distinct rendering of its templates: Dagster resolves every value of
the block again for each table (a template compilation each, milliseconds a table), seconds for thousands.

(No `from __future__ import annotations`: Dagster reads the resolver's annotations as types.)
"""
from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Any

import dagster as dg
from dagster.components.resolved.context import ResolutionContext
from dagster.components.resolved.core_models import AssetAttributesModel, resolve_asset_spec_update_kwargs_to_mapping
from dagster.components.utils.translation import TRANSLATOR_MERGE_ATTRIBUTES, TranslatorResolvingInfo
from jinja2.nativetypes import NativeTemplate

from pipeline_assets.translator import LakenormTableProps


class Translation:
    """`translation(spec, props) -> AssetSpec`, templated with `props` and `spec`."""

    def __init__(self, context: ResolutionContext, model: AssetAttributesModel | str) -> None:
        self.model, self.context = model, context.at_path("translation")
        self.per_table = TranslatorResolvingInfo(asset_attributes=model, resolution_context=context,
                                                 model_key="translation")
        self.templates = () if isinstance(model, str) else tuple(_templates(model.model_dump(exclude_unset=True)))
        self.resolved: dict[tuple[str, ...], Mapping[str, Any]] = {}

    def __call__(self, spec: dg.AssetSpec, props: LakenormTableProps) -> dg.AssetSpec:
        scoped = self.context.with_scope(props=props, spec=spec)
        try:
            rendered = tuple(repr(_template(text).render(**scoped.scope)) for text in self.templates)
        except Exception:  # noqa: BLE001 - Dagster's own resolution below says what is wrong, and where
            rendered = None
        if isinstance(self.model, str) or rendered is None:  # the whole block is one template
            return self.per_table.get_asset_spec(spec, {"props": props, "spec": spec})
        if rendered not in self.resolved:
            self.resolved[rendered] = resolve_asset_spec_update_kwargs_to_mapping(context=scoped, model=self.model)
        return applied(spec, self.resolved[rendered])


def resolve_translation(context: ResolutionContext, model: AssetAttributesModel | str) -> Translation:
    return Translation(context, model)


TRANSLATION_RESOLVER = dg.Resolver(
    resolve_translation, model_field_type=str | AssetAttributesModel, inject_before_resolve=False,
    description="AssetSpec attributes of every table (those of dagster-dlt's and dagster-sling's `translation`), "
                "templated with `props` (source, stream, table, kind, location) and `spec` (the spec so far).")


def applied(spec: dg.AssetSpec, attributes: Mapping[str, Any]) -> dg.AssetSpec:
    """`spec` with resolved `translation` attributes, as `TranslatorResolvingInfo.get_asset_spec` applies them."""
    attributes = dict(attributes)
    if "code_version" in attributes:
        attributes["code_version"] = str(attributes["code_version"])
    if "key_prefix" in attributes:
        prefix = attributes.pop("key_prefix")
        attributes["key"] = dg.AssetKey.from_coercible(attributes.pop("key", spec.key)).with_prefix(prefix)
    merged = {name: attributes.pop(name) for name in TRANSLATOR_MERGE_ATTRIBUTES if name in attributes}
    return spec.replace_attributes(**attributes).merge_attributes(**merged)


def _templates(value: Any) -> Iterator[str]:
    """The texts of a block that may be templates (rendered per table)."""
    if isinstance(value, str) and "{" in value:
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _templates(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _templates(item)


@lru_cache(maxsize=256)
def _template(text: str) -> NativeTemplate:
    return NativeTemplate(text)
