"""Tables of different streams of one source that would get one name (SPEC §4).

Under `airbyte` they are disambiguated as Airbyte's table name registry does: every table of a clashing
name gets Airbyte's hashed name (`<stream>_<3-hex sha1>` for a root, `<parent>_<hash>_<child>` for a
nested table, the hash over the stream's namespace and JSON path), and the collision is recorded in
each stream's schema (`collisions`, `table: null`), hence in the schema versions and the run metadata.
Under `native` and `dlt` such streams are still refused (`stream_plans.check_distinct_tables`).
"""
from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import replace
from typing import Protocol, TypeVar

from normalization_core.configuration.config import SourceConfig
from normalization_core.inputs.landing import source_catalog
from normalization_core.schema.stream_settings import StreamSettings
from normalization_core.naming import AirbyteNaming
from normalization_core.naming.airbyte import hash_json_path, transform_standard_naming
from normalization_core.schema.model import CollisionDoc, StreamSchema, TableSchema


class Planned(Protocol):
    """What renaming needs of a stream's plan (`stream_plans.StreamPlan`, a dataclass: renamed with `replace`)."""

    @property
    def settings(self) -> StreamSettings: ...

    @property
    def schema(self) -> StreamSchema: ...


Plan = TypeVar("Plan", bound=Planned)


def disambiguate_tables(source: SourceConfig, plans: dict[str, Plan]) -> dict[str, Plan]:
    """The plans with tables that clash across streams renamed (airbyte); other conventions: unchanged."""
    if not source.naming.convention.disambiguates_streams:
        return plans
    conv = source.naming.identifiers
    assert isinstance(conv, AirbyteNaming)
    owners: dict[str, list[tuple[str, TableSchema]]] = {}
    for stream, plan in plans.items():
        for table in plan.schema["tables"]:
            owners.setdefault(table["name"].lower(), []).append((stream, table))
    clashing = {name: members for name, members in owners.items() if len({s for s, _ in members}) > 1}
    taken = {name for name in owners if name not in clashing}
    renamed: dict[str, dict[str, str]] = {}
    docs: dict[str, list[CollisionDoc]] = {}
    for name, members in clashing.items():
        resolved = {}
        for stream, table in members:
            namespace = plans[stream].settings.namespace or source.name
            new = _unique(conv, conv.hashed_child_table_name(namespace, [stream, *table["json_path"]]), taken)
            renamed.setdefault(stream, {})[table["name"]] = new
            resolved[table_origin(stream, table["json_path"])] = new
        doc = CollisionDoc(table=None, name=name, originals=list(resolved), resolved=resolved)
        for stream in dict.fromkeys(stream for stream, _ in members):
            docs.setdefault(stream, []).append(doc)
    return {stream: replace(plan, schema=renamed_schema(plan.schema, renamed[stream], docs[stream]))
            if stream in renamed else plan for stream, plan in plans.items()}


def _unique(conv: AirbyteNaming, name: str, taken: set[str]) -> str:
    """`name`, or (when its 3 hex digits clash too, as `a` and `A` do) `name_1`, `name_2`, ...; marked taken."""
    candidate, index = name, 0
    while candidate.lower() in taken:
        index += 1
        candidate = conv.normalize_table_name(f"{name}_{index}")
    taken.add(candidate.lower())
    return candidate


def table_origin(stream: str, json_path: Iterable[str]) -> str:
    """How a collision names a table's origin: the stream and the JSON path, joined by `/`."""
    return "/".join([stream, *json_path])


def renamed_schema(schema: StreamSchema, names: dict[str, str], collisions: list[CollisionDoc]) -> StreamSchema:
    """A copy of `schema` with tables (and parent references) renamed and the collisions recorded."""
    result = copy.deepcopy(schema)
    for table in result["tables"]:
        table["name"] = names.get(table["name"], table["name"])
        if table["parent"] is not None:
            table["parent"] = names.get(table["parent"], table["parent"])
    result["collisions"] = [*result["collisions"], *copy.deepcopy(collisions)]
    return result


def raw_tables(source: SourceConfig, streams: Iterable[str]) -> dict[str, str]:
    """The raw table of each stream. `airbyte`: `_airbyte_raw_<stream>` untruncated, as Airbyte names it;
    streams (of `streams` and the catalog) whose raw names clash get `_<3-hex sha1>` of namespace and stream
    (then `_1`, ... if that clashes too), in stream-name order, so a stream's raw table does not depend on
    the other streams of its package. Other conventions: the normalized stream name after the prefix
    (clashes are refused by the caller)."""
    streams = list(streams)
    names, conv = source.naming.names, source.naming.identifiers
    if not isinstance(conv, AirbyteNaming):
        return {stream: names.raw_table(conv.normalize_table_name(stream)) for stream in streams}
    catalog = source_catalog(source)
    by_name: dict[str, list[str]] = {}
    for stream in sorted({*streams, *catalog}):
        by_name.setdefault(conv.raw_table_name(stream), []).append(stream)
    taken = {plain for plain, members in by_name.items() if len(members) == 1}
    result = {members[0]: plain for plain, members in by_name.items() if len(members) == 1}
    for plain, members in by_name.items():
        for stream in members if len(members) > 1 else []:
            settings = catalog.get(stream)
            namespace = (settings.namespace if settings else None) or source.name
            hashed = f"{plain}_{hash_json_path([transform_standard_naming(namespace).lower(), stream])}"
            result[stream] = _unique_raw(hashed, taken)
    return {stream: result[stream] for stream in streams}


def _unique_raw(name: str, taken: set[str]) -> str:
    candidate, index = name, 0
    while candidate in taken:
        index += 1
        candidate = f"{name}_{index}"
    taken.add(candidate)
    return candidate
