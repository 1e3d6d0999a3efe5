"""A stream's primary key resolved to its root table's columns (one function for SCD and the checks)."""
from __future__ import annotations

import pytest

from normalization_core.schema.stream_settings import StreamSettings, resolve_primary_key
from normalization_core.errors import ConfigError
from normalization_core.schema import schema_from_json_schema

JSON_SCHEMA = {"type": "object", "properties": {
    "Id": {"type": "integer"}, "region": {"type": "string"},
    "customer": {"type": "object", "properties": {"Code": {"type": "string"}}},
    "items": {"type": "array", "items": {"type": "string"}},
}}


def settings(*key: tuple[str, ...]) -> StreamSettings:
    return StreamSettings(name="Orders", json_schema=JSON_SCHEMA, primary_key=key)


@pytest.mark.parametrize(("convention", "expected"), [
    ("native", ("customer__code", "id")),
    ("airbyte", None),  # airbyte keeps objects as JSON columns: a nested path is no column
])
def test_key_paths_become_root_columns_in_key_order(convention: str, expected: tuple[str, ...] | None) -> None:
    root = schema_from_json_schema("Orders", JSON_SCHEMA, convention)["tables"][0]
    key = settings(("customer", "Code"), ("Id",))
    if expected is None:
        with pytest.raises(ConfigError, match="primary_key 'customer.Code' is not a scalar column"):
            resolve_primary_key(key, root)
    else:
        assert resolve_primary_key(key, root) == expected


def test_a_path_that_is_no_column_names_the_stream_and_the_path() -> None:
    root = schema_from_json_schema("Orders", JSON_SCHEMA)["tables"][0]
    with pytest.raises(ConfigError, match=r"stream 'Orders'.*primary_key 'items' is not a scalar column"):
        resolve_primary_key(settings(("Id",), ("items",)), root)


def test_a_stream_without_a_key_has_no_key_columns() -> None:
    root = schema_from_json_schema("Orders", JSON_SCHEMA)["tables"][0]
    assert resolve_primary_key(settings(), root) == ()
