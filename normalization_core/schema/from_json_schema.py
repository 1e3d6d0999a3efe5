"""A stream's tables from its catalog JSON Schema (SPEC §4.2, §4.3, §5.1).

Two steps: `json_schema_nodes` reads the JSON Schema into a small tree of nodes, then the convention's
layout (`dlt_layout`, `airbyte_layout`) lays the tree out into tables and columns.
"""
from __future__ import annotations

from typing import Any

from normalization_core.naming.conventions import DEFAULT_CONVENTION, convention_named
from normalization_core.schema.airbyte_layout import AirbyteLayout
from normalization_core.schema.dlt_layout import DltLayout
from normalization_core.schema.layout import Layout
from normalization_core.schema.model import StreamSchema

LAYOUTS: dict[str, type[Layout]] = {layout.name: layout for layout in (DltLayout, AirbyteLayout)}
"""The layouts by the name a `Convention` gives."""


def schema_from_json_schema(stream: str, json_schema: dict[str, Any], convention: str = DEFAULT_CONVENTION,
                            max_identifier_length: int | None = None, max_table_nesting: int = 1000,
                            previous: StreamSchema | None = None, namespace: str | None = None
                            ) -> StreamSchema:
    """The typed tables of `stream`; names in `previous` (an earlier version) never change.

    `namespace` (the source) only matters to `airbyte`, whose colliding table names hash it.
    """
    spec = convention_named(convention, "typing from a catalog")
    conv = spec.naming(max_identifier_length)
    layout = LAYOUTS[spec.layout](conv, spec.system_names, max_table_nesting, previous, namespace)
    tables, collisions = layout.build(stream, layout.read(stream, json_schema))
    return StreamSchema(stream=stream, convention=convention, max_identifier_length=conv.max_identifier_length,
                        max_table_nesting=max_table_nesting, tables=tables, collisions=collisions)
