"""A stream's tables from its catalog JSON Schema, for the `native` and `dlt` conventions (SPEC §4.2, §5.1).

Two steps: the JSON Schema is read into a small tree of nodes (types resolved, unions merged as the
Airbyte S3 guide says), then the tree is laid out into tables and columns (dlt's nesting rules).
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from normalization_core.columns import SystemNames, system_names
from normalization_core.errors import ConfigError
from normalization_core.naming import NamingConvention, assign_names, get_convention
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

SUPPORTED_CONVENTIONS = ("native", "dlt")
VALUE_COLUMN = "value"
"""The column of a table of scalars."""
LIST_KEY = "list"
"""dlt's name for an array inside an array: the `__list` table, or the JSON column past the nesting limit."""
_SYSTEM = "system:"
"""Prefix of the reserved originals that hold the system column names in `assign_names`."""
_WELL_KNOWN: dict[str, tuple[str, str]] = {
    "String": ("string", "string"), "BinaryData": ("string", "string"), "Boolean": ("boolean", "boolean"),
    "Integer": ("bigint", "integer"), "Number": ("double", "number"), "Date": ("date", "date"),
    "TimestampWithTimezone": ("timestamp", "timestamp_with_timezone"),
    "TimestampWithoutTimezone": ("timestamp_ntz", "timestamp_without_timezone"),
    "TimeWithTimezone": ("time", "time_with_timezone"),
    "TimeWithoutTimezone": ("time", "time_without_timezone"),
}
"""Airbyte protocol v1 `WellKnownTypes.json#/definitions/<name>` -> (logical type, union tag)."""


@dataclass(frozen=True)
class Scalar:
    logical: str
    tag: str
    """Name of this option in a disjoint record (S3 guide): `integer`, `number`, `date`, ..."""


@dataclass(frozen=True)
class Json:
    tag: str
    """`object` (no properties), `array` (no items), `unknown` (no usable type) or `null` (only null)."""


@dataclass(frozen=True)
class Obj:
    properties: tuple[tuple[str, Node], ...]
    tag = "object"


@dataclass(frozen=True)
class Arr:
    items: Node
    tag = "array"


@dataclass(frozen=True)
class Union:
    options: tuple[Node, ...]
    """Two or more options with distinct tags."""
    tag = "union"


Node = Scalar | Json | Obj | Arr | Union
_NULL = Json("null")
"""A schema that allows only null: dropped from unions, else a JSON text column."""


def schema_from_json_schema(stream: str, json_schema: dict[str, Any], convention: str = "native",
                            max_identifier_length: int | None = None, max_table_nesting: int = 1000,
                            previous: StreamSchema | None = None) -> StreamSchema:
    """The typed tables of `stream`; names in `previous` (an earlier version) never change."""
    if convention not in SUPPORTED_CONVENTIONS:
        raise ValueError(f"convention {convention!r}: typing from a catalog supports {SUPPORTED_CONVENTIONS}")
    conv = get_convention(convention, max_identifier_length)
    record = _NodeReader(stream).read(json_schema, ())
    layout = _Layout(conv, system_names(convention), max_table_nesting, previous)
    tables, collisions = layout.build(stream, record)
    return StreamSchema(stream=stream, convention=convention, max_identifier_length=conv.max_identifier_length,
                        max_table_nesting=max_table_nesting, tables=tables, collisions=collisions)


class _NodeReader:
    """JSON Schema -> nodes; union options of one kind merge, conflicts raise ConfigError."""

    def __init__(self, stream: str) -> None:
        self.stream = stream

    def read(self, schema: Any, key_path: tuple[str, ...]) -> Node:
        if not isinstance(schema, dict):
            return Json("unknown")
        if isinstance(schema.get("$ref"), str):
            return self._well_known(schema["$ref"])
        options = schema.get("oneOf") or schema.get("anyOf")
        if isinstance(options, list):
            return self._union([self.read(option, key_path) for option in options], key_path)
        types = schema.get("type", _implied_type(schema))
        types = [types] if isinstance(types, str) else list(types or [])
        typed = [self._typed(t, schema, key_path) for t in dict.fromkeys(types) if t != "null"]
        return self._union(typed, key_path) if typed or not types else _NULL

    def _typed(self, json_type: str, schema: dict[str, Any], key_path: tuple[str, ...]) -> Node:
        airbyte_type = schema.get("airbyte_type")
        if json_type in ("integer", "number"):
            if airbyte_type == "big_integer":
                return Scalar("decimal", "integer")
            if json_type == "integer" or airbyte_type == "integer":
                return Scalar("bigint", "integer")
            return Scalar("double", "number")
        if json_type == "boolean":
            return Scalar("boolean", "boolean")
        if json_type == "string":
            return _string(schema.get("format"), airbyte_type)
        if json_type == "object":
            properties = schema.get("properties")
            if not isinstance(properties, dict) or not properties:
                return Json("object")
            return Obj(tuple((key, self.read(sub, (*key_path, key))) for key, sub in properties.items()))
        if json_type == "array":
            items = schema.get("items")
            return Arr(self.read(items, key_path)) if isinstance(items, dict) else Json("array")
        return Json("unknown")

    @staticmethod
    def _well_known(ref: str) -> Node:
        name = ref.rsplit("/", 1)[-1]
        return Scalar(*_WELL_KNOWN[name]) if name in _WELL_KNOWN else Json("unknown")

    def _union(self, options: list[Node], key_path: tuple[str, ...]) -> Node:
        flat = [leaf for option in options for leaf in _flatten(option) if leaf != _NULL]
        if not flat or any(option == Json("unknown") for option in flat):
            return Json("unknown")
        by_tag: dict[str, Node] = {}
        for option in flat:
            seen = by_tag.get(option.tag)
            by_tag[option.tag] = option if seen is None else self._merge(seen, option, key_path)
        merged = tuple(by_tag.values())
        return merged[0] if len(merged) == 1 else Union(merged)

    def _merge(self, a: Node, b: Node, key_path: tuple[str, ...]) -> Node:
        """Merge two options of one kind: objects merge their properties, arrays their items."""
        if a == b:
            return a
        if isinstance(a, Json) and a.tag == b.tag:
            return a  # a schemaless object or array absorbs a described one: nothing is lost
        if isinstance(b, Json) and a.tag == b.tag:
            return b
        if isinstance(a, Scalar) and isinstance(b, Scalar) and {a.logical, b.logical} == {"bigint", "decimal"}:
            return Scalar("decimal", "integer")
        if isinstance(a, Obj) and isinstance(b, Obj):
            return self._merge_objects(a, b, key_path)
        if isinstance(a, Arr) and isinstance(b, Arr):
            return Arr(self._merge(a.items, b.items, key_path))
        where = ".".join(key_path) or "(record)"
        raise ConfigError(f"stream {self.stream!r}", f"key {where!r}: union options cannot be merged: "
                                                     f"{_describe(a)} vs {_describe(b)}")

    def _merge_objects(self, a: Obj, b: Obj, key_path: tuple[str, ...]) -> Obj:
        merged = dict(a.properties)
        for key, node in b.properties:
            merged[key] = self._merge(merged[key], node, (*key_path, key)) if key in merged else node
        return Obj(tuple(merged.items()))


def _implied_type(schema: dict[str, Any]) -> list[str]:
    if "properties" in schema:
        return ["object"]
    if "items" in schema:
        return ["array"]
    return ["unknown"]


def _string(fmt: Any, airbyte_type: Any) -> Scalar:
    if fmt == "date" or airbyte_type == "date":
        return Scalar("date", "date")
    if fmt == "date-time" or airbyte_type in ("timestamp_with_timezone", "timestamp_without_timezone"):
        if airbyte_type == "timestamp_without_timezone":
            return Scalar("timestamp_ntz", "timestamp_without_timezone")
        return Scalar("timestamp", "timestamp_with_timezone")
    if fmt == "time" or airbyte_type in ("time_with_timezone", "time_without_timezone"):
        tag = "time_with_timezone" if airbyte_type == "time_with_timezone" else "time_without_timezone"
        return Scalar("time", tag)
    return Scalar("string", "string")


def _flatten(node: Node) -> Iterator[Node]:
    if isinstance(node, Union):
        for option in node.options:
            yield from _flatten(option)
    else:
        yield node


def _describe(node: Node) -> str:
    if isinstance(node, Scalar):
        return node.logical
    if isinstance(node, Obj):
        return "object{" + ", ".join(key for key, _ in node.properties) + "}"
    if isinstance(node, Arr):
        return f"array of {_describe(node.items)}"
    if isinstance(node, Union):
        return " | ".join(_describe(option) for option in node.options)
    return f"{node.tag} (JSON)"


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
            path = [*prefix, key]
            fits = depth + 1 <= self.max_nesting
            if isinstance(node, Obj) and fits:
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
        result = assign_names(self.conv, list(originals), self._reserved(table), normalize=self._column_name)
        self.collisions += [_collision_doc(table["name"], c) for c in result.collisions]
        table["columns"] = [self._column(result.mapping[original], path, node, table)
                            for original, (path, node) in originals.items()]

    def _column_name(self, original: str) -> str:
        keys = json.loads(original)
        return self.conv.shorten(self.conv.make_path(*(self.conv.normalize_path(k) for k in keys)))

    def _field_name(self, original: str) -> str:
        return self.conv.normalize_path(json.loads(original)[-1])

    def _reserved(self, table: TableSchema) -> dict[str, str]:
        """System columns (never given to data) and the names an earlier version already gave."""
        n = self.names
        system = [n.raw_id, n.extracted_at, n.load_id, n.data, n.meta, n.normalized_at, n.list_idx, n.root_id,
                  n.row_id(table["name"]), n.valid_from, n.valid_to, n.is_current, n.unique_key, n.unique_key_scd]
        if table["parent"] is not None:
            system.append(n.parent_id(table["parent"]))
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
            return {json.dumps(c["path"]): c["name"] for c in table["columns"]}
    return {}
