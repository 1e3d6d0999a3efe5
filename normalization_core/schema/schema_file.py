"""`schema_file` (SPEC §5.4): a schema YAML as `lakenorm schema` prints it, edited by a user, given back as a
stream's schema (dlt's import schema). The stream's loads evolve from it as from a stored version.

Validated like the configuration: unknown keys are errors, and each column's types must agree.
"""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from normalization_core.errors import ConfigError
from normalization_core.schema.column_types import ACCEPTS, EPOCH, KIND_OF_LOGICAL
from normalization_core.schema.model import LOGICAL_DATA_TYPES, StreamSchema, TableSchema

_DOCUMENT = ({"stream", "schema"}, {"source", "version", "version_hash"})
_SCHEMA = ({"stream", "convention", "max_identifier_length", "max_table_nesting", "tables"}, {"collisions", "inferred"})
_TABLE = ({"name", "parent", "path", "json_path", "kind", "element", "value", "depth", "columns"},
          {"row_key", "parent_key", "flatten"})
_COLUMN = ({"name", "path", "data_type", "logical_type"}, {"json_text", "nullable", "accepts", "variant_of"})


def read_schema_file(path: Path, stream: str | None = None, convention: str | None = None) -> dict[str, StreamSchema]:
    """The file's schemas by stream (only `stream`'s, which it must hold, when given)."""
    where = f"schema_file {path}"
    try:
        documents = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]
    except yaml.YAMLError as exc:
        raise ConfigError(where, f"not valid YAML: {exc}".replace("\n", " ")) from None
    schemas = {}
    for i, doc in enumerate(documents):
        at = f"{where}: document {i + 1}"
        _keys(doc, _DOCUMENT, at, "a schema document")
        schemas[str(doc["stream"])] = _schema(doc["schema"], str(doc["stream"]), convention, at)
    if stream is not None:
        if stream not in schemas:
            raise ConfigError(where, f"no document for stream {stream!r} (streams: {', '.join(sorted(schemas))})")
        return {stream: schemas[stream]}
    return schemas


def _schema(doc: Any, stream: str, convention: str | None, where: str) -> StreamSchema:
    _keys(doc, _SCHEMA, where, "'schema'")
    if doc["stream"] != stream:
        raise ConfigError(where, f"schema.stream {doc['stream']!r} is not the document's stream {stream!r}")
    if convention is not None and doc["convention"] != convention:
        raise ConfigError(where, f"schema.convention {doc['convention']!r} is not the source's {convention!r}")
    tables = doc["tables"]
    if not isinstance(tables, list) or not tables:
        raise ConfigError(where, "schema.tables must be a non-empty list")
    for table in tables:
        _table(table, f"{where}: table {table.get('name') if isinstance(table, dict) else table!r}")
    return StreamSchema(**{"collisions": [], **doc, "inferred": True})  # type: ignore[typeddict-item]


def _table(doc: Any, where: str) -> TableSchema:
    _keys(doc, _TABLE, where, "a table")
    names = set()
    for column in doc["columns"]:
        _keys(column, _COLUMN, where, "a column")
        at = f"{where}, column {column['name']!r}"
        if column["name"] in names:
            raise ConfigError(at, "two columns of this name")
        names.add(column["name"])
        _column_types(column, at)
    return doc


def _column_types(column: dict, where: str) -> None:
    """The column's Spark type must be its logical type's; inference markers follow an edited type."""
    logical = column["logical_type"]
    if logical not in KIND_OF_LOGICAL:
        raise ConfigError(where, f"logical_type {logical!r}: choose one of {', '.join(KIND_OF_LOGICAL)}")
    expected = LOGICAL_DATA_TYPES[logical]
    if column["data_type"] != expected:
        raise ConfigError(where, f"data_type {column['data_type']!r} does not fit logical_type {logical!r}: "
                                 f"set data_type to {expected!r}, or change both")
    column.setdefault("json_text", logical == "json")
    column.setdefault("nullable", True)
    kinds = ACCEPTS[KIND_OF_LOGICAL[logical]]
    epoch = logical == "timestamp" and set(column.get("accepts", ())) == ACCEPTS[EPOCH]  # numbers are epochs
    if "variant_of" not in column and (logical != "json" or "accepts" in column) and not epoch:
        column["accepts"] = sorted(kinds)  # an edited type takes its type's kinds


def _keys(doc: Any, keys: tuple[set[str], set[str]], where: str, what: str) -> None:
    required, optional = keys
    if not isinstance(doc, dict):
        raise ConfigError(where, f"{what} must be a mapping, got {type(doc).__name__}")
    unknown = sorted(set(map(str, doc)) - required - optional)
    if unknown:
        raise ConfigError(where, f"unknown key {unknown[0]!r} in {what} (allowed: {', '.join(sorted(required | optional))})")
    missing = sorted(required - set(doc))
    if missing:
        raise ConfigError(where, f"missing key {missing[0]!r} in {what}")


def with_stored_additions(given: StreamSchema, stored: StreamSchema | None) -> StreamSchema:
    """The schema a `schema_file` stream evolves from: the file's tables and columns as the user wrote them,
    then what earlier loads added to the stored version that the file does not have."""
    if stored is None:
        return given
    merged = copy.deepcopy(given)
    tables = {t["name"]: t for t in merged["tables"]}
    for table in stored["tables"]:
        if table["name"] not in tables:
            if table["parent"] in tables:
                merged["tables"].append(copy.deepcopy(table))
                tables[table["name"]] = merged["tables"][-1]
            continue
        own = tables[table["name"]]
        names = {c["name"] for c in own["columns"]}
        own["columns"] += [copy.deepcopy(c) for c in table["columns"] if c["name"] not in names]
    return merged
