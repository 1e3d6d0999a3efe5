"""A stream's tables from its catalog JSON Schema, for the `native` and `dlt` conventions (SPEC §4.2, §5.1).

Two steps: `json_schema_nodes` reads the JSON Schema into a small tree of nodes, then this module
lays the tree out into tables and columns (dlt's nesting rules).
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from normalization_core.columns import SystemNames, system_names
from normalization_core.naming import NamingConvention, assign_names, get_convention
from normalization_core.schema.json_schema_nodes import Arr, Json, Mixed, Node, NodeReader, Obj, Scalar, Union
from normalization_core.schema.model import (
    LOGICAL_DATA_TYPES,
    CollisionDoc,
    ColumnSchema,
    ElementKind,
    FieldSchema,
    StreamSchema,
    TableKind,
    TableSchema,
    UnionVariant,
    lineage,
)

SUPPORTED_CONVENTIONS = ("native", "dlt", "airbyte", "direct")
VALUE_COLUMN = "value"
"""The column of a table of scalars."""
LIST_KEY = "list"
"""dlt's name for an array inside an array: the `__list` table, or the JSON column past the nesting limit."""
_SYSTEM = "system:"
"""Prefix of the reserved originals that hold the system column names in `assign_names`."""
def schema_from_json_schema(stream: str, json_schema: dict[str, Any], convention: str = "native",
                            max_identifier_length: int | None = None, max_table_nesting: int = 1000,
                            previous: StreamSchema | None = None, namespace: str | None = None) -> StreamSchema:
    """The typed tables of `stream`; names in `previous` (an earlier version) never change.

    `namespace` (the source) only matters to `airbyte`, whose colliding table names hash it.
    """
    if convention not in SUPPORTED_CONVENTIONS:
        raise ValueError(f"convention {convention!r}: typing from a catalog supports {SUPPORTED_CONVENTIONS}")
    if convention == "airbyte":
        from normalization_core.schema.airbyte_layout import airbyte_schema  # it builds on this module's layout

        return airbyte_schema(stream, json_schema, max_identifier_length, max_table_nesting, previous, namespace)
    conv = get_convention(convention, max_identifier_length)
    record = NodeReader(stream).read(json_schema, ())
    layout = _Layout(conv, system_names(convention), max_table_nesting, previous)
    tables, collisions = layout.build(stream, record)
    return StreamSchema(stream=stream, convention=convention, max_identifier_length=conv.max_identifier_length,
                        max_table_nesting=max_table_nesting, tables=tables, collisions=collisions)


@dataclass
class _Pending:
    """A table whose columns are known and whose name is still to be assigned."""

    identity: str
    """Unique, stable key of the table: the JSON dump of the array paths from the root."""
    proposed: str
    table: TableSchema
    columns: list[tuple[list[str], Node]]
    children: list[tuple[list[str], Node, int]]
    """(path in the row, array items, depth of the child rows)."""


class _Layout:
    """Nodes -> tables: objects flatten, arrays become child tables, past the nesting limit JSON text."""

    def __init__(self, conv: NamingConvention, names: SystemNames, max_nesting: int,
                 previous: StreamSchema | None) -> None:
        self.conv = conv
        self.names = names
        self.max_nesting = max_nesting
        self.previous = previous
        self.collisions: list[CollisionDoc] = []
        self.table_names = _previous_table_names(previous)

    def build(self, stream: str, record: Node) -> tuple[list[TableSchema], list[CollisionDoc]]:
        root = _Pending("[]", self.conv.normalize_table_name(stream),
                        _table(None, [], [], "root", "record", 0), [], [])
        if isinstance(record, Obj):
            self._collect(root, record, [], 0)
        tables: list[TableSchema] = []
        level = [root]
        while level:
            self._name_tables(level)
            for pending in level:
                self._name_columns(pending)
                tables.append(pending.table)
            level = [child for pending in level for child in self._children(pending)]
        return tables, self.collisions

    def _collect(self, pending: _Pending, obj: Obj, prefix: list[str], depth: int) -> None:
        """Columns and child arrays of an object whose keys sit at `depth` (dlt counts each object/array)."""
        for key, node in obj.properties:
            self._place(pending, [*prefix, key], node, depth)

    def _place(self, pending: _Pending, path: list[str], node: Node, depth: int) -> None:
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

    def _children(self, parent: _Pending) -> Iterator[_Pending]:
        for path, items, depth in parent.children:
            element = _element_kind(items)
            key_path = tuple(path) if path else (LIST_KEY,)
            table = _table(parent.table["name"], path, [*parent.table["json_path"], *path], "child", element, depth)
            child = _Pending(json.dumps([json.loads(parent.identity), path]),
                             self.conv.child_table_name(parent.table["name"], key_path), table, [], [])
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

    def _name_tables(self, level: list[_Pending]) -> None:
        proposed = {p.identity: p.proposed for p in level}
        result = assign_names(self.conv, list(proposed), self.table_names, normalize=proposed.__getitem__)
        self.table_names = result.mapping
        self.collisions += [_collision_doc(None, c) for c in result.collisions]
        for pending in level:
            pending.table["name"] = result.mapping[pending.identity]

    def _name_columns(self, pending: _Pending) -> None:
        table = pending.table
        element_column = {"scalar": VALUE_COLUMN, "array": LIST_KEY}.get(table["element"])
        if element_column:
            table["columns"] = [self._column(self.conv.normalize_path(element_column), path, node, table)
                                for path, node in pending.columns]
            return
        originals = {json.dumps(path): (path, node) for path, node in pending.columns}
        result = assign_names(self.conv, list(originals), self._reserved(table), normalize=self._column_name,
                              literal=self._written_name)
        self.collisions += [_collision_doc(table["name"], c) for c in result.collisions]
        table["columns"] = [self._column(result.mapping[original], path, node, table)
                            for original, (path, node) in originals.items()]

    def _column_name(self, original: str) -> str:
        keys = json.loads(original)
        return self.conv.shorten(self.conv.make_path(*(self.conv.normalize_path(k) for k in keys)))

    def _written_name(self, original: str) -> str:
        return self.conv.make_path(*json.loads(original))

    def _field_name(self, original: str) -> str:
        return self.conv.normalize_path(json.loads(original)[-1])

    def _reserved(self, table: TableSchema) -> dict[str, str]:
        """System columns (never given to data) and the names an earlier version already gave."""
        n = self.names
        system = [n.raw_id, n.extracted_at, n.load_id, n.data, n.meta, n.normalized_at, n.list_idx, n.root_id,
                  n.row_id(table), n.valid_from, n.valid_to, n.is_current, n.unique_key, n.unique_key_scd]
        if table["parent"] is not None:
            system.append(n.parent_key(table))
        reserved = {_SYSTEM + name: name for name in system}
        reserved.update(_previous_column_names(self.previous, table["name"]))
        return reserved

    def _column(self, name: str, path: list[str], node: Node, table: TableSchema) -> ColumnSchema:
        column = ColumnSchema(name=name, path=path, data_type="string", logical_type="json", json_text=True)
        if isinstance(node, Scalar):
            column.update(logical_type=node.logical, data_type=LOGICAL_DATA_TYPES[node.logical], json_text=False)
        elif isinstance(node, Union):
            variants = [self._variant(option, table, path) for option in node.options]
            column.update(logical_type="union", data_type=_union_type(variants), json_text=False,
                          variants=variants)
        return column

    def _variant(self, node: Node, table: TableSchema, path: list[str]) -> UnionVariant:
        spec = self._field_spec(node, table, path)
        variant = UnionVariant(name=node.tag, logical_type=spec["logical_type"], data_type=spec["data_type"])
        if "fields" in spec:
            variant["fields"] = spec["fields"]
        return variant

    def _field_spec(self, node: Node, table: TableSchema, path: list[str]) -> dict[str, Any]:
        """Type of a value inside a union: scalars, structs for objects, JSON text for arrays."""
        if isinstance(node, Scalar):
            return {"logical_type": node.logical, "data_type": LOGICAL_DATA_TYPES[node.logical]}
        if isinstance(node, Union):
            variants = [self._variant(option, table, path) for option in node.options]
            return {"logical_type": "union", "data_type": _union_type(variants), "variants": variants}
        if isinstance(node, Obj):
            fields = self._struct_fields(node, table, path)
            data_type = "struct<" + ",".join(f"{f['name']}:{f['data_type']}" for f in fields) + ">"
            return {"logical_type": "object", "data_type": data_type, "fields": fields}
        return {"logical_type": "json", "data_type": "string"}

    def _struct_fields(self, obj: Obj, table: TableSchema, path: list[str]) -> list[FieldSchema]:
        originals = {json.dumps([*path, key]): (key, node) for key, node in obj.properties}
        result = assign_names(self.conv, list(originals), normalize=self._field_name)
        self.collisions += [_collision_doc(table["name"], c) for c in result.collisions]
        fields = []
        for original, (key, node) in originals.items():
            spec = self._field_spec(node, table, [*path, key])
            fields.append(FieldSchema(name=result.mapping[original], key=key, **spec))
        return fields


def _table(parent: str | None, path: list[str], json_path: list[str], kind: TableKind, element: ElementKind,
           depth: int) -> TableSchema:
    """A table without its name and columns yet."""
    return TableSchema(name="", parent=parent, path=path, json_path=json_path, kind=kind, element=element,
                       value=element == "scalar", depth=depth, columns=[])


def _element_kind(items: Node) -> ElementKind:
    if isinstance(items, Obj):
        return "object"
    return "array" if isinstance(items, Arr) else "scalar"


def _union_type(variants: list[UnionVariant]) -> str:
    """Spark's simple string of the disjoint record, as `DataFrame.dtypes` shows it."""
    return "struct<type:string," + ",".join(f"{v['name']}:{v['data_type']}" for v in variants) + ">"


def _collision_doc(table: str | None, collision: Any) -> CollisionDoc:
    return CollisionDoc(table=table, name=collision.name, originals=list(collision.originals),
                        resolved=dict(collision.resolved))


def _identity(schema: StreamSchema, table: TableSchema) -> str:
    identity: Any = []
    for step in lineage(schema, table["name"])[1:]:
        identity = [identity, step["path"]]
    return json.dumps(identity)


def _previous_table_names(previous: StreamSchema | None) -> dict[str, str]:
    if previous is None:
        return {}
    return {_identity(previous, table): table["name"] for table in previous["tables"]}


def _previous_column_names(previous: StreamSchema | None, table_name: str) -> dict[str, str]:
    if previous is None:
        return {}
    for table in previous["tables"]:
        if table["name"] == table_name:
            return {json.dumps(c["path"]): c["name"] for c in table["columns"] if "variant_of" not in c}
    return {}
