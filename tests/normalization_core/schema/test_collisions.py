"""Every collision rule of every convention, typed from a catalog and inferred (SPEC §4, §10): keys and arrays
that normalize to one name (tests/cases/collisions/keys.json) each keep a column or a table of their own, under
a unique, legal name that is no system column's, and every renamed one is reported in the schema's `collisions`."""
from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from normalization_core.columns import SystemNames
from normalization_core.naming import AirbyteNaming
from normalization_core.naming.base import is_safe_table_name
from normalization_core.naming.conventions import CONVENTIONS, get_convention, system_names
from normalization_core.schema import StreamSchema, TableSchema, schema_from_json_schema
from normalization_core.schema.column_types import ARRAY_STEP, KEY_STEP
from normalization_core.schema.inference import infer_schema
from tests.conftest import CASES

DOC = json.loads((CASES / "collisions" / "keys.json").read_text(encoding="utf-8"))
LONG = {f"$LONG_{c}": "K" * 150 + c + "K" * 149 for c in "ABC"}
"""300-character keys that differ only in the middle: every convention's shortening cuts that part out."""
LEGAL = {"native": r"[a-z_][a-z0-9_]*", "dlt": r"[a-z_][a-z0-9_]*", "airbyte": r"[a-z0-9_]+",
         "direct": "[^ ,;{}()\\t=\\n\\r'\"\\x00]+"}
STREAM = "records"
MODES = ("catalog", "inferred")


def system_columns(names: SystemNames, table: TableSchema) -> set[str]:
    """The system columns a table of the convention may hold, and those its history and raw tables hold."""
    found = {names.raw_id, names.extracted_at, names.load_id, names.data, names.meta, names.normalized_at,
             names.list_idx, names.root_id, names.valid_from, names.valid_to, names.is_current, names.unique_key,
             names.unique_key_scd, names.file, names.line, names.error, names.upstream_changes, names.row_id(table),
             *names.foreign_names}
    if table["parent"] is not None:
        found.add(names.parent_key(table))
    return found


def record_of(case: dict[str, Any], names: SystemNames) -> dict[str, Any]:
    """The case's record with `$LONG_*` and `$SYSTEM` made keys (`$SYSTEM`: every system column name)."""
    system = sorted(system_columns(names, {"name": STREAM, "parent": None}))

    def expand(value: Any) -> Any:
        if isinstance(value, list):
            return [expand(item) for item in value]
        if not isinstance(value, dict):
            return value
        expanded = {}
        for key, item in value.items():
            if key == "$SYSTEM":
                expanded.update({name: 100 + i for i, name in enumerate(system)})
            else:
                expanded[LONG.get(key, key)] = expand(item)
        return expanded
    return expand(case["record"])


def json_schema(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return {"type": "object", "properties": {k: json_schema(v) for k, v in value.items()}}
    if isinstance(value, list):
        merged: dict[str, Any] = {}
        for item in value:
            merged.update(item)
        return {"type": "array", "items": json_schema(merged)}
    return {"type": "integer"}


def observed(value: Any, steps: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], str]]:
    """The (path, kind) pairs inference sees in a record."""
    if isinstance(value, dict):
        yield steps, "object"
        for key, item in value.items():
            yield from observed(item, (*steps, KEY_STEP + key))
    elif isinstance(value, list):
        yield steps, "array"
        for item in value:
            yield from observed(item, (*steps, ARRAY_STEP))
    else:
        yield steps, "bigint"


def schema_of(convention: str, mode: str, record: dict[str, Any]) -> StreamSchema:
    if mode == "catalog":
        return schema_from_json_schema(STREAM, json_schema(record), convention)
    return infer_schema(STREAM, set(observed(record)), convention)


def leaves(value: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Key paths of the record's scalars (array positions left out)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from leaves(item, (*path, key))
    elif isinstance(value, list):
        for item in value:
            yield from leaves(item, path)
    else:
        yield path


def arrays(value: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from arrays(item, (*path, key))
    elif isinstance(value, list):
        yield path
        for item in value:
            yield from arrays(item, path)


def plain_column_name(convention: str, mode: str, path: list[str]) -> str:
    """The name a key path normalizes to alone: its keys joined (dlt's layout), the key (airbyte's)."""
    conv = get_convention(convention)
    if isinstance(conv, AirbyteNaming) and mode == "catalog":
        return conv.normalize_identifier(path[-1])
    return conv.shorten(conv.make_path(*(conv.normalize_path(key) for key in path)))


def reported(schema: StreamSchema, table: str | None) -> set[str]:
    """The names the schema reports as given to a colliding key (or table) of `table` (None: tables)."""
    return {name for c in schema["collisions"] if c["table"] == table for name in c["resolved"].values()}


def both_modes() -> list[tuple[str, str]]:
    return [(convention, mode) for convention in CONVENTIONS for mode in MODES]


@pytest.mark.parametrize(("convention", "mode"), both_modes())
@pytest.mark.parametrize("case", DOC["columns"], ids=lambda case: case["name"])
def test_colliding_keys_each_keep_a_column_uniquely_and_legally_named_and_reported(convention, mode, case):
    names = system_names(convention)
    record = record_of(case, names)
    schema = schema_of(convention, mode, record)
    placed = {(*t["json_path"], *c["path"]): (t, c) for t in schema["tables"] for c in t["columns"]
              if "variant_of" not in c}
    assert set(leaves(record)) <= set(placed), "a key lost its column"
    for table in schema["tables"]:
        data = [c["name"] for c in table["columns"]]
        assert len({n.lower() for n in data}) == len(data), data
        system = {n.lower() for n in system_columns(names, table)}
        assert all(re.fullmatch(LEGAL[convention], n) and len(n) <= get_convention(convention).max_identifier_length
                   for n in data), data
        for column in table["columns"]:
            if column.get("sets_row_key"):  # a record's own `_dlt_id`: the row key itself (dlt's)
                assert column["name"] == names.row_id(table) and table["parent"] is None
                continue
            assert column["name"].lower() not in system, column["name"]
            if "variant_of" not in column and column["name"] != plain_column_name(convention, mode, column["path"]):
                assert column["name"] in reported(schema, table["name"]), (column["path"], column["name"])


@pytest.mark.parametrize(("convention", "mode"), both_modes())
@pytest.mark.parametrize("case", DOC["tables"], ids=lambda case: case["name"])
def test_colliding_arrays_each_keep_a_table_uniquely_and_safely_named_and_reported(convention, mode, case):
    record = record_of(case, system_names(convention))
    schema = schema_of(convention, mode, record)
    tables = [t["name"] for t in schema["tables"]]
    assert len({t.lower() for t in tables}) == len(tables), tables
    assert all(is_safe_table_name(t) for t in tables), tables
    by_path = {tuple(t["json_path"]): t for t in schema["tables"]}
    assert set(arrays(record)) <= set(by_path), "an array lost its table"
    conv = get_convention(convention)
    for path in set(arrays(record)):
        table = by_path[path]
        parent = STREAM if isinstance(conv, AirbyteNaming) else schema["tables"][0]["name"]
        if table["name"] != conv.child_table_name(parent, path):
            assert table["name"] in reported(schema, None), (path, table["name"])
    assert set(leaves(record)) <= {(*t["json_path"], *c["path"]) for t in schema["tables"] for c in t["columns"]}
