"""JSON Schema -> a small tree of nodes: types resolved, unions merged as the Airbyte S3 guide says."""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from normalization_core.errors import ConfigError

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


@dataclass(frozen=True)
class Mixed:
    """An inferred key whose values differ in kind (dlt places each by its kind): the scalar column, the
    object's flattened columns and the array's child table, each optional (at least two are set)."""

    scalar: Scalar | None
    obj: Obj | None
    arr: Arr | None
    tag = "mixed"

    def parts(self) -> tuple[Node, ...]:
        return tuple(part for part in (self.scalar, self.obj, self.arr) if part is not None)


Node = Scalar | Json | Obj | Arr | Union | Mixed
_NULL = Json("null")
"""A schema that allows only null: dropped from unions, else a JSON text column."""


class NodeReader:
    """JSON Schema -> nodes; union options of one kind merge, conflicts raise ConfigError."""

    def __init__(self, stream: str, items_as_properties: bool = False) -> None:
        self.stream = stream
        self.items_as_properties = items_as_properties
        """Airbyte's reading: an object without properties takes those of its `items`, if any."""

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
            items = schema.get("items")
            if not properties and self.items_as_properties and isinstance(items, dict):
                properties = items.get("properties")
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
