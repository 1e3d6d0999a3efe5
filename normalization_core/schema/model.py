"""Typed documents describing a stream's tables (SPEC §3, §4.2, §5.1), plus lookups and a content hash.

The documents are plain dicts (TypedDict), so they dump to JSON or YAML as they are.
"""
from __future__ import annotations

import copy
import hashlib
import json
from typing import Any, Literal, NotRequired, TypedDict

LogicalType = Literal[
    "bigint", "decimal", "double", "boolean", "string", "date", "timestamp", "timestamp_ntz", "time",
    "json", "union", "object",
]
"""How a value is typed: a scalar cast, `json` (kept as JSON text), a disjoint-record `union`, or an
`object` (a struct, only as a field of a union variant)."""
TableKind = Literal["root", "child"]
ElementKind = Literal["record", "object", "scalar", "array", "nested_object"]
"""What one row of a table is made from: the record (root), an array element that is an object,
a scalar (`value` table), an array (`__list` table) or, under the `airbyte` layout, an object nested
in the parent row (one row per parent row holding it, no list index)."""

LOGICAL_DATA_TYPES: dict[str, str] = {
    "bigint": "bigint", "decimal": "decimal(38,0)", "double": "double", "boolean": "boolean",
    "string": "string", "date": "date", "timestamp": "timestamp", "timestamp_ntz": "timestamp_ntz",
    "time": "bigint", "json": "string",
}
"""Spark SQL type of each scalar logical type (`time` is microseconds since midnight UTC)."""
DATE_TIME_TYPES = frozenset({"date", "timestamp", "timestamp_ntz", "time"})
"""Logical types whose empty strings become NULL without a recorded change (SPEC §5.1)."""


class FieldSchema(TypedDict):
    """A field of an object variant of a union (a struct field, not a table column)."""

    name: str
    """Normalized field name."""
    key: str
    """Raw JSON key."""
    logical_type: LogicalType
    data_type: str
    variants: NotRequired[list[UnionVariant]]
    fields: NotRequired[list[FieldSchema]]


class UnionVariant(TypedDict):
    """One option of a typed disjoint record `struct<type: string, <name>: ...>`."""

    name: str
    """Field name and `type` tag: `integer`, `number`, `string`, `boolean`, `object`, `array`, `date`, ..."""
    logical_type: LogicalType
    data_type: str
    fields: NotRequired[list[FieldSchema]]
    """For the `object` variant: its properties."""


class ColumnSchema(TypedDict):
    """A data column of a table."""

    name: str
    """Normalized, collision-free column name."""
    path: list[str]
    """Raw JSON keys from the table's row object to the value; [] is the row itself (`value`, `list`)."""
    data_type: str
    """Spark SQL type: `bigint`, `double`, ..., `decimal(38,0)` or `struct<type: string, ...>`."""
    logical_type: LogicalType
    json_text: bool
    """The value is kept as its JSON text."""
    nullable: bool
    variants: NotRequired[list[UnionVariant]]
    """For `union` columns: the options, in struct field order after `type`."""
    accepts: NotRequired[list[str]]
    """Inferred columns (SPEC §5.2): the value kinds (`transform.kinds`) this column takes; a value of
    another kind goes to a variant column instead, without a recorded change."""
    variant_of: NotRequired[str]
    """On a variant column `<column>__v_<type>`: the name of its main column (same path)."""
    sets_row_key: NotRequired[bool]
    """The record's own row key (dlt's `_dlt_id`): written as the row key column, whose value it is where its
    text is not empty (else the key lakenorm derives)."""


class TableSchema(TypedDict):
    """A typed table of a stream: the root or a nested child."""

    name: str
    parent: str | None
    path: list[str]
    """Raw JSON keys from the parent's row object to the array (flattened objects included); [] for the
    root and for a `__list` table, whose parent row is the array itself."""
    json_path: list[str]
    """Raw JSON keys from the record to this table's rows, array positions left out."""
    kind: TableKind
    element: ElementKind
    value: bool
    """A table of scalars with the single column `value`."""
    depth: int
    """Nesting level of the table's rows (root 0), counted as dlt does."""
    columns: list[ColumnSchema]
    row_key: NotRequired[str]
    """Row key column when the convention names it per table (`airbyte`: after the stream or nested field)."""
    parent_key: NotRequired[str]
    """Parent row key column when the convention names it per table (`airbyte`)."""
    flatten: NotRequired[int]
    """Array levels between the parent's value and the rows (an array of arrays of objects: 1), flattened
    into one list (`airbyte`)."""


class CollisionDoc(TypedDict):
    """Keys (or tables) that normalized to one name, and the names each finally got."""

    table: str | None
    """Table whose columns collided; None for a collision between table names."""
    name: str
    originals: list[str]
    resolved: dict[str, str]


class StreamSchema(TypedDict):
    """All typed tables of one stream, root first, every parent before its children."""

    stream: str
    convention: str
    max_identifier_length: int
    max_table_nesting: int
    tables: list[TableSchema]
    collisions: list[CollisionDoc]
    inferred: NotRequired[bool]
    """Typed by inference from the data (no catalog): SPEC §5.2."""


def root_table(schema: StreamSchema) -> TableSchema:
    return schema["tables"][0]


def find_table(schema: StreamSchema, name: str) -> TableSchema:
    for table in schema["tables"]:
        if table["name"] == name:
            return table
    raise KeyError(f"stream {schema['stream']!r} has no table {name!r}; "
                   f"tables: {', '.join(t['name'] for t in schema['tables'])}")


def child_tables(schema: StreamSchema, parent: str) -> list[TableSchema]:
    """Direct children of `parent`, in schema order."""
    return [t for t in schema["tables"] if t["parent"] == parent]


def lineage(schema: StreamSchema, name: str) -> list[TableSchema]:
    """The tables from the root down to `name`, both included."""
    chain = [find_table(schema, name)]
    while chain[0]["parent"] is not None:
        chain.insert(0, find_table(schema, chain[0]["parent"]))
    return chain


def field_path(table: TableSchema, column: ColumnSchema) -> str:
    """The column's original JSON path joined by '.', as reported in `_norm_meta.changes`."""
    return ".".join([*table["json_path"], *column["path"]])


def schema_document(schema: StreamSchema) -> dict[str, Any]:
    """A deep, plain copy for `yaml.safe_dump` or `json.dumps`."""
    return copy.deepcopy(dict(schema))


def schema_hash(schema: StreamSchema) -> str:
    """sha256 (hex) of the schema's canonical JSON: equal schemas, equal hashes."""
    canonical = json.dumps(schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
