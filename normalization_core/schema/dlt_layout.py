"""dlt's layout of a stream's tables, for `native`, `dlt` and `direct` and for every inferred stream (SPEC §4.2).

Objects flatten into their table's columns (`a__b`), arrays become child tables, and past the nesting
limit a value is kept as JSON text.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from normalization_core.naming import assign_names
from normalization_core.naming.base import is_safe_table_name
from normalization_core.schema.json_schema_nodes import Arr, Json, Mixed, Node, Obj
from normalization_core.schema.layout import Layout, PendingTable, new_table
from normalization_core.schema.model import CollisionDoc, ElementKind, StreamSchema, TableSchema, lineage

VALUE_COLUMN = "value"
"""The column of a table of scalars."""
LIST_KEY = "list"
"""dlt's name for an array inside an array: the `__list` table, or the JSON column past the nesting limit."""


class DltLayout(Layout):
    """Nodes -> tables: objects flatten, arrays become child tables, past the nesting limit JSON text."""

    name = "dlt"

    def build(self, stream: str, record: Node) -> tuple[list[TableSchema], list[CollisionDoc]]:
        self.previous_tables = _previous_tables(self.previous)
        self.table_names = {identity: table["name"] for identity, table in self.previous_tables.items()
                            if is_safe_table_name(table["name"])}  # an unsafe one (older `direct`) moves
        root = PendingTable("[]", self.conv.normalize_table_name(stream),
                            new_table(None, [], [], "root", "record", 0), [], [], written=stream)
        if isinstance(record, Obj):
            self._collect(root, record, [], 0)
        tables: list[TableSchema] = []
        level = [root]
        while level:
            self._name_tables(level)
            for pending in level:
                self._name_columns(pending, self.previous_tables.get(pending.identity))
                tables.append(pending.table)
            level = [child for pending in level for child in self._children(pending)]
        return tables, self.collisions

    def _collect(self, pending: PendingTable, obj: Obj, prefix: list[str], depth: int) -> None:
        """Columns and child arrays of an object whose keys sit at `depth` (dlt counts each object/array)."""
        for key, node in obj.properties:
            self._place(pending, [*prefix, key], node, depth)

    def _place(self, pending: PendingTable, path: list[str], node: Node, depth: int) -> None:
        fits = depth + 1 <= self.max_nesting
        if isinstance(node, Mixed) and fits:
            for part in node.parts():
                self._place(pending, path, part, depth)
        elif isinstance(node, Mixed):
            pending.columns.append((path, Json("object")))
        elif isinstance(node, Obj) and fits:
            self._collect(pending, node, path, depth + 1)
        elif isinstance(node, Arr) and fits:
            pending.children.append((path, node.items, depth + 1))
        elif isinstance(node, (Obj, Arr)):
            pending.columns.append((path, Json(node.tag)))
        else:
            pending.columns.append((path, node))

    def _children(self, parent: PendingTable) -> Iterator[PendingTable]:
        for path, items, depth in parent.children:
            element = _element_kind(items)
            key_path = tuple(path) if path else (LIST_KEY,)
            table = new_table(parent.table["name"], path, [*parent.table["json_path"], *path], "child", element,
                              depth)
            child = PendingTable(json.dumps([json.loads(parent.identity), path]),
                                 self.conv.child_table_name(parent.table["name"], key_path), table, [], [],
                                 written=self.conv.make_path(parent.table["name"], *key_path))
            if isinstance(items, Obj):
                self._collect(child, items, [], depth)
            elif isinstance(items, Arr) and depth + 2 <= self.max_nesting:
                # dlt wraps an inner array in a row {"list": [...]}, one level deeper
                child.children.append(([], items.items, depth + 2))
            elif isinstance(items, Arr):
                child.columns.append(([], Json("array")))
            else:
                child.columns.append(([], items))
            yield child

    def _name_tables(self, level: list[PendingTable]) -> None:
        proposed = {p.identity: p.proposed for p in level}
        written = {p.identity: p.written or p.proposed for p in level}
        result = assign_names(self.conv, list(proposed), self.table_names, normalize=proposed.__getitem__,
                              written=written.__getitem__)
        self.table_names = result.mapping
        self.add_collisions(None, result.collisions)
        for pending in level:
            pending.table["name"] = result.mapping[pending.identity]

    def _name_columns(self, pending: PendingTable, before: TableSchema | None) -> None:
        table = pending.table
        element_column = {"scalar": VALUE_COLUMN, "array": LIST_KEY}.get(table["element"])
        if element_column:
            table["columns"] = [self.typed_column(self.conv.normalize_path(element_column), path, node, table)
                                for path, node in pending.columns]
            return
        originals = {json.dumps(path): (path, node) for path, node in pending.columns}
        result = assign_names(self.conv, list(originals), self._reserved(table, before), normalize=self._column_name,
                              written=self._written_name, written_first=True)
        self.add_collisions(table["name"], result.collisions)
        table["columns"] = [self.typed_column(result.mapping[original], path, node, table)
                            for original, (path, node) in originals.items()]
        self.record_row_key(table)

    def _column_name(self, original: str) -> str:
        keys = json.loads(original)
        return self.conv.shorten(self.conv.make_path(*(self.conv.normalize_path(k) for k in keys)))

    def _written_name(self, original: str) -> str:
        return self.conv.make_path(*json.loads(original))

    def _reserved(self, table: TableSchema, before: TableSchema | None) -> dict[str, str]:
        """System columns (never given to data) and the names an earlier version (`before`) already gave."""
        reserved = self.system_columns(table)
        if before is not None:
            reserved.update({json.dumps(c["path"]): c["name"] for c in before["columns"] if "variant_of" not in c})
        return reserved


def _element_kind(items: Node) -> ElementKind:
    if isinstance(items, Obj):
        return "object"
    return "array" if isinstance(items, Arr) else "scalar"


def _identity(schema: StreamSchema, table: TableSchema) -> str:
    """A table's stable key: the JSON dump of the array paths from the root."""
    identity: Any = []
    for step in lineage(schema, table["name"])[1:]:
        identity = [identity, step["path"]]
    return json.dumps(identity)


def _previous_tables(previous: StreamSchema | None) -> dict[str, TableSchema]:
    """An earlier version's tables by their stable key."""
    if previous is None:
        return {}
    return {_identity(previous, table): table for table in previous["tables"]}
