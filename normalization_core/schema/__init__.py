"""Schema documents of a stream's tables (pure Python, no Spark): from a catalog's JSON Schema (SPEC §5.1)."""
from __future__ import annotations

from normalization_core.schema.from_json_schema import schema_from_json_schema
from normalization_core.schema.model import (
    CollisionDoc,
    ColumnSchema,
    FieldSchema,
    StreamSchema,
    TableSchema,
    UnionVariant,
    child_tables,
    field_path,
    find_table,
    lineage,
    root_table,
    schema_document,
    schema_hash,
)

__all__ = [
    "CollisionDoc",
    "ColumnSchema",
    "FieldSchema",
    "StreamSchema",
    "TableSchema",
    "UnionVariant",
    "child_tables",
    "field_path",
    "find_table",
    "lineage",
    "root_table",
    "schema_document",
    "schema_from_json_schema",
    "schema_hash",
]
