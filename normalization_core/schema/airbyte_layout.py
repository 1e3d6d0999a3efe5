"""Airbyte's layout of a stream's tables from its catalog JSON Schema, for the `airbyte` convention (SPEC §4.3).

Airbyte Basic Normalization's layout: every property is a column of its table, objects and arrays as
their JSON text. A nested object with properties also becomes a child table (one row per parent row
holding it); an array of objects a child table (one row per element); an array of scalars stays a JSON
column only; an array of arrays of objects a child table of the inner objects (flattened). Tables are
named by the JSON path from the stream joined with `_`; only names that collide switch, all of them, to
Airbyte's `<parent>_<3-hex sha1>_<child>`. Clashing columns get `_1`, `_2`, ... in catalog order. Row keys
are named after the stream or nested field (`_airbyte_<name>_hashid`), parent keys after the parent's
(`_airbyte_<name>_foreign_hashid`). Typing is shared by every layout (`layout.Layout`, SPEC §5.1).
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from normalization_core.columns import AIRBYTE, SystemNames
from normalization_core.naming import AirbyteNaming, assign_names
from normalization_core.schema.json_schema_nodes import Arr, Json, Node, Obj
from normalization_core.schema.layout import Layout, PendingTable, new_table
from normalization_core.schema.model import CollisionDoc, StreamSchema, TableSchema

DEFAULT_NAMESPACE = "public"
"""Schema whose name seeds the collision hash when the caller names none (Postgres' default schema)."""


class AirbyteLayout(Layout):
    """Nodes -> tables: one column per property, a child table per object and per array of objects."""

    name = "airbyte"
    items_as_properties = True
    conv: AirbyteNaming

    def __init__(self, conv: AirbyteNaming, names: SystemNames, max_nesting: int, previous: StreamSchema | None,
                 namespace: str | None = None) -> None:
        super().__init__(conv, names, max_nesting, previous, namespace or DEFAULT_NAMESPACE)
        self.stream = ""
        self.previous_tables = {_identity(t["json_path"]): t for t in previous["tables"]} if previous else {}

    def build(self, stream: str, record: Node) -> tuple[list[TableSchema], list[CollisionDoc]]:
        self.stream = stream
        root = PendingTable(_identity([]), self.conv.normalize_table_name(stream),
                            new_table(None, [], [], "root", "record", 0), [], [])
        if isinstance(record, Obj):
            self._collect(root, record, [], 0)
        ordered: list[tuple[PendingTable, PendingTable | None]] = [(root, None)]
        level = [root]
        while level:  # breadth first: every parent before its children
            pairs = [(child, parent) for parent in level for child in self._children(parent)]
            ordered += pairs
            level = [child for child, _ in pairs]
        self._name_all_tables([pending for pending, _ in ordered])
        for pending, parent in ordered:
            pending.table["parent"] = parent.table["name"] if parent else None
            self._name_keys(pending.table, parent.table if parent else None)
        for pending, _ in ordered:
            self._name_columns(pending)
        return [pending.table for pending, _ in ordered], self.collisions

    def _collect(self, pending: PendingTable, obj: Obj, prefix: list[str], depth: int) -> None:
        """One column per property; objects and arrays of objects within the nesting limit also nest."""
        for key, node in obj.properties:  # (Airbyte ignored `_airbyte_*` properties: here they are kept, renamed)
            nests = depth + 1 <= self.max_nesting
            if isinstance(node, (Obj, Arr)):
                pending.columns.append(([key], Json(node.tag)))
                if nests and isinstance(_innermost(node)[0], Obj):
                    pending.children.append(([key], node, depth + 1))
            else:
                pending.columns.append(([key], node))

    def _children(self, parent: PendingTable) -> Iterator[PendingTable]:
        for path, node, depth in parent.children:
            obj, levels = _innermost(node)
            element = "nested_object" if isinstance(node, Obj) else "object"
            json_path = [*parent.table["json_path"], *path]
            table = new_table(None, path, json_path, "child", element, depth)  # type: ignore[arg-type]
            if levels > 1:
                table["flatten"] = levels - 1
            child = PendingTable(_identity(json_path), self.conv.child_table_name(self.stream, tuple(json_path)),
                                 table, [], [])
            assert isinstance(obj, Obj)
            self._collect(child, obj, [], depth)
            yield child

    def _name_all_tables(self, pendings: list[PendingTable]) -> None:
        """Plain names; every member of a group of colliding new names gets the hashed name."""
        final = {p.identity: self.previous_tables[p.identity]["name"] for p in pendings
                 if p.identity in self.previous_tables}
        groups: dict[str, list[PendingTable]] = {}
        for pending in pendings:
            if pending.identity not in final:
                groups.setdefault(pending.proposed.lower(), []).append(pending)
        kept = {name.lower() for name in final.values()}
        collided = [members for plain, members in groups.items() if len(members) > 1 or plain in kept]
        final.update({m.identity: m.proposed for members in groups.values() for m in members})
        final.update({m.identity: self._hashed_name(m) for members in collided for m in members})
        self._make_unique(pendings, final)
        self.collisions += [CollisionDoc(table=None, name=members[0].proposed, originals=[m.identity for m in members],
                                         resolved={m.identity: final[m.identity] for m in members})
                            for members in collided]
        for pending in pendings:
            pending.table["name"] = final[pending.identity]

    def _hashed_name(self, pending: PendingTable) -> str:
        return self.conv.hashed_child_table_name(self.namespace, [self.stream, *pending.table["json_path"]])

    def _make_unique(self, pendings: list[PendingTable], final: dict[str, str]) -> None:
        """A hashed name that still clashes (3 hex digits) gets `_1`, `_2`, ...: never two tables, one name."""
        seen: set[str] = set()
        for pending in sorted(pendings, key=lambda p: p.identity not in self.previous_tables):
            name, index = final[pending.identity], 0
            while name.lower() in seen:
                index += 1
                name = self.conv.normalize_table_name(f"{final[pending.identity]}_{index}")
            seen.add(name.lower())
            final[pending.identity] = name

    def _name_keys(self, table: TableSchema, parent: TableSchema | None) -> None:
        """Row key after the stream or nested field (`_<level>` when a child repeats its parent's name),
        parent key after the parent's; an earlier version's keys (or their absence) are kept."""
        before = self.previous_tables.get(_identity(table["json_path"]))
        if before is not None:
            table.update({k: before[k] for k in ("row_key", "parent_key") if k in before})  # type: ignore[misc]
            return
        name_keys(self.conv, self.stream, table, parent)

    def _name_columns(self, pending: PendingTable) -> None:
        table = pending.table
        keys = [path[0] for path, _ in pending.columns]
        result = assign_names(self.conv, keys, self._reserved(table), normalize=self.conv.normalize_identifier,
                              keep_order=True)
        self.add_collisions(table["name"], result.collisions)
        table["columns"] = [self.typed_column(result.mapping[path[0]], path, node, table)
                            for path, node in pending.columns]

    def _reserved(self, table: TableSchema) -> dict[str, str]:
        """System columns, and the names an earlier version gave, by raw key (no flattening here)."""
        reserved = self.system_columns(table)
        before = self.previous_tables.get(_identity(table["json_path"]))
        if before is not None:
            reserved.update({column["path"][0]: column["name"] for column in before["columns"]})
        return reserved


def name_keys(conv: AirbyteNaming, stream: str, table: TableSchema, parent: TableSchema | None) -> None:
    """Set the table's `row_key` (after the stream or the last key of its JSON path; a child whose name
    repeats its parent's gets its level) and `parent_key` (after the parent's row key)."""
    name = table["json_path"][-1] if table["json_path"] else stream
    repeats = None
    if parent is not None:
        parent_name = parent["json_path"][-1] if parent["json_path"] else stream
        if conv.normalize_table_name(name) == conv.normalize_table_name(parent_name):
            repeats = len(table["json_path"]) + 1
    if repeats is None and conv.row_key_column(name) == AIRBYTE.root_id:  # a field named `root`
        repeats = len(table["json_path"]) + 1
    table["row_key"] = conv.row_key_column(name, repeats)
    if parent is not None and "row_key" in parent:
        table["parent_key"] = foreign_key(parent["row_key"])


def name_inferred_keys(conv: AirbyteNaming, schema: StreamSchema, previous: StreamSchema | None) -> None:
    """Keys of an inferred stream's tables under `airbyte` (parents first); a table of `previous` keeps
    its keys (or their absence: tables written before tables stored their keys)."""
    before = {table["name"]: table for table in previous["tables"]} if previous else {}
    by_name = {table["name"]: table for table in schema["tables"]}
    for table in schema["tables"]:
        if table["name"] in before:
            table.update({k: before[table["name"]][k] for k in ("row_key", "parent_key")  # type: ignore[misc]
                          if k in before[table["name"]]})
        else:
            name_keys(conv, schema["stream"], table, by_name.get(table["parent"] or ""))


def foreign_key(row_key: str) -> str:
    """`_airbyte_<name>_foreign_hashid` from the parent's `_airbyte_<name>_hashid` (at most 8 characters longer)."""
    return row_key.removesuffix("_hashid") + "_foreign_hashid"


def _innermost(node: Obj | Arr) -> tuple[Any, int]:
    """The node under every array level of `node`, and how many array levels there are."""
    levels = 0
    while isinstance(node, Arr):
        node, levels = node.items, levels + 1
    return node, levels


def _identity(json_path: list[str]) -> str:
    """A table's stable key: its JSON path from the record (unique: no flattening, no `__list` tables)."""
    return json.dumps(json_path)
