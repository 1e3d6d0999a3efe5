"""The layout base: a stream's node tree -> its tables and typed columns (SPEC §4.2, §4.3, §5.1).

A layout decides which nodes become tables and how tables and columns are named (`dlt_layout`,
`airbyte_layout`); typing a column (scalars, unions, structs) and the system columns that no data
column may take are the same in every layout, and live here.
"""
from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from normalization_core.columns import SystemNames
from normalization_core.naming import NameCollision, NamingConvention, assign_names
from normalization_core.schema.json_schema_nodes import Node, NodeReader, Obj, Scalar, Union
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
)
from normalization_core.naming.quoting import field_name

SYSTEM_PREFIX = "system:"
"""Prefix of the reserved originals that hold the system column names in `assign_names`."""


@dataclass
class PendingTable:
    """A table whose columns are known and whose name is still to be assigned."""

    identity: str
    """Unique, stable key of the table within its stream."""
    proposed: str
    table: TableSchema
    columns: list[tuple[list[str], Node]]
    children: list[tuple[list[str], Node, int]]
    """(path in the row, the node under it, depth of the child rows)."""
    written: str = ""
    """The table's name as written before normalizing (stream name, or parent and keys joined), if not `proposed`."""


class Layout(ABC):
    """Nodes -> tables under one naming convention; names in `previous` (an earlier version) never change."""

    name: ClassVar[str]
    """The layout's key in a `conventions.Convention`."""
    items_as_properties: ClassVar[bool] = False
    """How its JSON Schema is read: `NodeReader`'s option of the same name."""

    def __init__(self, conv: NamingConvention, names: SystemNames, max_nesting: int,
                 previous: StreamSchema | None, namespace: str | None = None) -> None:
        self.conv = conv
        self.names = names
        self.max_nesting = max_nesting
        self.previous = previous
        self.namespace = namespace  # the stream's catalog namespace or source; only `airbyte` hashes it
        self.collisions: list[CollisionDoc] = []

    def read(self, stream: str, json_schema: dict[str, Any]) -> Node:
        """The node tree of a catalog stream's JSON Schema."""
        return NodeReader(stream, items_as_properties=self.items_as_properties).read(json_schema, ())

    @abstractmethod
    def build(self, stream: str, record: Node) -> tuple[list[TableSchema], list[CollisionDoc]]:
        """The stream's tables (root first, parents before children) and the name collisions resolved."""

    def add_collisions(self, table: str | None, collisions: Iterable[NameCollision]) -> None:
        self.collisions += [collision_doc(table, c) for c in collisions]

    def system_columns(self, table: TableSchema) -> dict[str, str]:
        """The system columns of `table` as reserved originals for `assign_names` (never given to data): a key
        named as one is renamed like any colliding key, and reported (SPEC §10). A root table's row key is
        not reserved where a record's own key sets it (`SystemNames.record_row_key`: `record_row_key`)."""
        n = self.names
        system = [n.raw_id, n.extracted_at, n.load_id, n.data, n.meta, n.normalized_at, n.list_idx, n.root_id,
                  n.valid_from, n.valid_to, n.is_current, n.unique_key, n.unique_key_scd, n.file, n.line,
                  n.error, n.upstream_changes, *n.foreign_names]
        if table["parent"] is not None:
            system.append(n.parent_key(table))
        if table["parent"] is not None or not n.record_row_key:
            system.append(n.row_id(table))
        return {SYSTEM_PREFIX + name: name for name in system}

    def record_row_key(self, table: TableSchema) -> None:
        """Under dlt's system names, the root column named as the row key (a record's own `_dlt_id`, any case)
        becomes the row key: named exactly so, its value's text (not empty) is the row's key (`transform.nesting`)."""
        row_id = self.names.row_id(table)
        if not self.names.record_row_key or table["parent"] is not None:
            return
        for column in table["columns"]:
            if column["name"].lower() == row_id.lower() and len(column["path"]) == 1 and "variant_of" not in column:
                json_text = column["logical_type"] not in LOGICAL_DATA_TYPES or column["logical_type"] == "json"
                column.update(name=row_id, data_type="string", logical_type="json" if json_text else "string",
                              json_text=json_text, sets_row_key=True)
                column.pop("variants", None)

    def typed_column(self, name: str, path: list[str], node: Node, table: TableSchema) -> ColumnSchema:
        """The column `name` of `table` holding the values at `path` of the node's type."""
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
            data_type = "struct<" + ",".join(f"{field_name(f['name'])}:{f['data_type']}" for f in fields) + ">"
            return {"logical_type": "object", "data_type": data_type, "fields": fields}
        return {"logical_type": "json", "data_type": "string"}

    def _struct_fields(self, obj: Obj, table: TableSchema, path: list[str]) -> list[FieldSchema]:
        originals = {json.dumps([*path, key]): (key, node) for key, node in obj.properties}
        result = assign_names(self.conv, list(originals), normalize=self._field_name, written=_last_key)
        self.add_collisions(table["name"], result.collisions)
        fields = []
        for original, (key, node) in originals.items():
            spec = self._field_spec(node, table, [*path, key])
            fields.append(FieldSchema(name=result.mapping[original], key=key, **spec))
        return fields

    def _field_name(self, original: str) -> str:
        return self.conv.normalize_path(_last_key(original))


def new_table(parent: str | None, path: list[str], json_path: list[str], kind: TableKind, element: ElementKind,
              depth: int) -> TableSchema:
    """A table without its name and columns yet."""
    return TableSchema(name="", parent=parent, path=path, json_path=json_path, kind=kind, element=element,
                       value=element == "scalar", depth=depth, columns=[])


def _last_key(original: str) -> str:
    """The key of a field from its original, the JSON text of its path."""
    return str(json.loads(original)[-1])


def collision_doc(table: str | None, collision: NameCollision) -> CollisionDoc:
    return CollisionDoc(table=table, name=collision.name, originals=list(collision.originals),
                        resolved=dict(collision.resolved))


def _union_type(variants: list[UnionVariant]) -> str:
    """Spark's simple string of the disjoint record, as `DataFrame.dtypes` shows it."""
    return "struct<type:string," + ",".join(f"{field_name(v['name'])}:{v['data_type']}" for v in variants) + ">"
