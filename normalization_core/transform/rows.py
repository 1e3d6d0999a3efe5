"""Reading the values of a table row by raw key path, from one of two parses of the record.

- The *tree*: Spark's JSON reader parses the record straight into nested structs shaped by the schema
  (`tree_parser`): scalar leaves as text, arrays of child tables as arrays, JSON and union values as
  VARIANTs. It is the fast path, taken by every record it reads without a conversion failure.
- The *VARIANT*: every object level is cast from a VARIANT when it is read (`VariantReader`), so that a
  value of the wrong kind (a string where an object is declared) is still seen, NULLED and reported.
  It serves the records the tree could not read cleanly, and inferred streams.

Both give the same typed rows for a record the tree reads cleanly, except that a non-integral number in
a text column reads as Spark's JSON reader prints it (`1.50` -> `1.5`, where the VARIANT keeps `1.50`).
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from normalization_core.schema.model import StreamSchema, TableSchema, child_tables, root_table
from normalization_core.transform.casts import SCALAR_LOGICAL_TYPES, cast_object
from normalization_core.transform.internal_columns import CORRUPT_RECORD


NATIVE_TYPES: dict[str, T.DataType] = {"bigint": T.LongType(), "double": T.DoubleType(), "boolean": T.BooleanType()}
"""Logical types whose values Spark's JSON reader types itself in the tree (`_leaf_type`)."""


@dataclass
class Level:
    """The keys of one object of a table row that the schema reads: leaves (logical type) or nested objects."""

    keys: dict[str, str | Level] = field(default_factory=dict)

    def add(self, path: list[str], logical_type: str) -> None:
        """A leaf at `path`. An inferred key may be both a value and an object (dlt places each kind): both
        read the same VARIANT, so the object level stands for the leaf too."""
        level = self
        for key in path[:-1]:
            nested = level.keys.get(key)
            if not isinstance(nested, Level):
                assert nested in (None, "json"), f"key {key!r} is both a value and an object"
                nested = level.keys[key] = Level()
            level = nested
        current = level.keys.get(path[-1])
        if isinstance(current, Level):
            assert logical_type == "json", f"key {path[-1]!r} is both a value and an object"
        else:
            level.keys[path[-1]] = logical_type

    def at(self, path: tuple[str, ...]) -> Level:
        level = self
        for key in path:
            nested = level.keys[key]
            assert isinstance(nested, Level)
            level = nested
        return level

    def fields(self) -> list[tuple[str, str]]:
        """(key, logical type) pairs; nested objects and arrays are read as VARIANTs."""
        return [(key, "object" if isinstance(v, Level) else v) for key, v in self.keys.items()]

    def position(self, key: str) -> str:
        return f"_{list(self.keys).index(key)}"

    def objects(self, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
        """Paths of the nested objects, parents first."""
        for key, value in self.keys.items():
            if isinstance(value, Level):
                yield (*prefix, key)
                yield from value.objects((*prefix, key))


def row_level(schema: StreamSchema, table: TableSchema) -> Level:
    """The keys a row of `table` is read by: its columns' paths and its child tables' arrays (as JSON)."""
    level = Level()
    for column in table["columns"]:
        if column["path"]:
            level.add(column["path"], "json" if "accepts" in column else column["logical_type"])
    for child in child_tables(schema, table["name"]):
        if child["path"]:
            level.add(child["path"], "json")
    return level


class VariantReader:
    """Reads values from a row struct whose nested objects and arrays are VARIANTs, casting each object once."""

    tree = False

    def __init__(self, row: Column, level: Level, objects: dict[tuple[str, ...], Column] | None = None) -> None:
        self.level = level
        self._objects: dict[tuple[str, ...], Column] = {(): row, **(objects or {})}

    def object_at(self, path: tuple[str, ...]) -> Column:
        if path not in self._objects:
            self._objects[path] = cast_object(self.value_at(path), self.level.at(path).fields())
        return self._objects[path]

    def value_at(self, path: tuple[str, ...]) -> Column:
        return self.object_at(path[:-1]).getField(self.level.at(path[:-1]).position(path[-1]))


class TreeReader:
    """Reads values from a row of the tree: nested objects are structs already, nothing is cast."""

    tree = True

    def __init__(self, row: Column, level: Level) -> None:
        self.level = level
        self._row = row

    def object_at(self, path: tuple[str, ...]) -> Column:
        column, level = self._row, self.level
        for key in path:
            column = column.getField(level.position(key))
            level = level.at((key,))
        return column

    def value_at(self, path: tuple[str, ...]) -> Column:
        return self.object_at(path[:-1]).getField(self.level.at(path[:-1]).position(path[-1]))


@dataclass(frozen=True)
class TreeParser:
    """`from_json` into the tree of a stream's root row, with a corrupt-record field that Spark's reader
    fills (with the whole text) when any value could not be converted: such a record is not clean."""

    by_key: T.StructType
    bad_field: str

    def parse(self, text: Column) -> Column:
        """The parsed struct, by position (`_0`, `_1`, ...), the corrupt-record text last (a row of the
        tree: readers read it by position and never reach that last field)."""
        parsed = F.from_json(text, self.by_key, {"columnNameOfCorruptRecord": self.bad_field, "mode": "PERMISSIVE"})
        return parsed.cast(positional(self.by_key))

    def is_clean(self, parsed: Column) -> Column:
        return parsed.isNotNull() & parsed.getField(f"_{len(self.by_key.fields) - 1}").isNull()


def tree_parser(schema: StreamSchema) -> TreeParser | None:
    """The fast-path parser of a catalog stream; None where the tree cannot be used (inferred streams, and
    layouts that keep a child table's value as a JSON column too, as `airbyte` does)."""
    if schema.get("inferred"):
        return None
    root = tree_type(schema, root_table(schema))
    if not isinstance(root, T.StructType):
        return None
    bad = CORRUPT_RECORD
    while bad in root.fieldNames():
        bad += "#"
    return TreeParser(T.StructType([*root.fields, T.StructField(bad, T.StringType())]), bad)


def tree_type(schema: StreamSchema, table: TableSchema) -> T.DataType | None:
    """The by-key Spark type of one row of `table` in the tree; None where the tree cannot hold it."""
    children = {tuple(c["path"]): c for c in child_tables(schema, table["name"])}
    if table["element"] == "scalar":
        (column,) = table["columns"]
        return _leaf_type(column["logical_type"])
    if table["element"] == "array":
        if () in children:
            return _container(schema, children[()])
        return T.VariantType()
    if any(tuple(column["path"]) in children for column in table["columns"]):
        return None
    return _struct_type(schema, row_level(schema, table), (), children)


def _struct_type(schema: StreamSchema, level: Level, prefix: tuple[str, ...],
                 children: dict[tuple[str, ...], TableSchema]) -> T.StructType | None:
    fields = []
    for key, value in level.keys.items():
        path = (*prefix, key)
        if isinstance(value, Level):
            data_type = _struct_type(schema, value, path, children)
        elif path in children:
            data_type = _container(schema, children[path])
        else:
            data_type = _leaf_type(value)
        if data_type is None:
            return None
        fields.append(T.StructField(key, data_type))
    return T.StructType(fields)


def _leaf_type(logical_type: str) -> T.DataType:
    """Numbers and booleans are read by Spark's reader itself: a value it cannot convert (a string, an
    integer beyond 64 bits, `1e3` for an integer) makes the record unclean, and the VARIANT path types it.
    Other scalars are read as text (JSON and union values as VARIANTs) and typed like the VARIANT's."""
    if logical_type in NATIVE_TYPES:
        return NATIVE_TYPES[logical_type]
    return T.StringType() if logical_type in SCALAR_LOGICAL_TYPES else T.VariantType()


def _container(schema: StreamSchema, child: TableSchema) -> T.DataType | None:
    """The type of the value holding a child table's rows: an array of them, or one nested object."""
    element = tree_type(schema, child)
    if element is None or child["element"] == "nested_object":
        return element
    return T.ArrayType(element)


def positional(data_type: T.DataType) -> T.DataType:
    """The same type with every struct's fields named by position: keys that differ only in case stay apart."""
    if isinstance(data_type, T.StructType):
        return T.StructType([T.StructField(f"_{i}", positional(f.dataType)) for i, f in enumerate(data_type.fields)])
    if isinstance(data_type, T.ArrayType):
        return T.ArrayType(positional(data_type.elementType))
    return data_type
