"""Property: under `airbyte`, no table, key or column name exceeds the identifier limit, and
streams whose tables clash are told apart, never refused, however long and colliding their names."""
from __future__ import annotations

import tempfile
from functools import cache
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from normalization_core.configuration.config import parse_config
from normalization_core.schema.stream_settings import StreamSettings
from normalization_core.plans.stream_plans import StreamPlan
from normalization_core.plans.table_names import disambiguate_tables
from normalization_core.schema import schema_from_json_schema

LIMITS = [40, 63, 100]
LONG = "postgres_has_a_64_characters_limit_to_table_names_but_other_destinations_are_fine"
names = st.one_of(
    st.sampled_from(["a", "A", "a a", "a_a", "a-a", "simple", "simple stream name", "stream_name", "x" * 80,
                     LONG, LONG.replace("limit", "and_not_more_limit"), "ünïcödé " * 9, "1_prefix", "root"]),
    st.lists(st.sampled_from(["a", "b", "_", " ", "é", "stream", "name", "x" * 30]), min_size=1,
             max_size=6).map("".join),
)
SCALAR = {"type": ["null", "string"]}


def _object(children: dict) -> dict:
    return {"type": ["null", "object"], "properties": children}


def _wrap(node: dict, kind: str) -> dict:
    if kind == "object":
        return node
    if kind == "array":
        return {"type": ["null", "array"], "items": node}
    return {"type": ["null", "array"], "items": {"type": ["null", "array"], "items": node}}


json_schemas = st.recursive(
    st.just(SCALAR),
    lambda inner: st.builds(
        _wrap,
        st.dictionaries(names, inner, min_size=1, max_size=4).map(_object),
        st.sampled_from(["object", "array", "array_of_arrays"]),
    ),
    max_leaves=12,
)
streams = st.dictionaries(names, st.dictionaries(names, json_schemas, max_size=4).map(_object), min_size=1,
                          max_size=4)


@cache
def _source(limit: int):
    base = Path(tempfile.mkdtemp())
    (base / "landing").mkdir()
    config = parse_config({"warehouse": "wh", "sources": [{"name": "schema_test", "landing": "landing",
                                                          "convention": "airbyte",
                                                          "max_identifier_length": limit}]},
                          base_dir=base)
    return config.source("schema_test")


@settings(max_examples=150, deadline=None)
@given(streams, st.sampled_from(LIMITS))
def test_no_airbyte_identifier_exceeds_the_limit_and_clashing_tables_are_told_apart(catalog, limit):
    source = _source(limit)
    plans = {stream: StreamPlan(StreamSettings(stream, schema),
                                schema_from_json_schema(stream, schema, "airbyte", limit, namespace=source.name))
             for stream, schema in catalog.items()}
    plans = disambiguate_tables(source, plans)
    seen: dict[str, str] = {}
    for stream, plan in plans.items():
        for table in plan.schema["tables"]:
            keys = [table["row_key"], *([table["parent_key"], "_airbyte_root_hashid"] if table["parent"] else [])]
            columns = [c["name"] for c in table["columns"]]
            for identifier in [table["name"], *keys, *columns]:
                assert len(identifier) <= limit, (stream, identifier)
            assert not set(keys) & set(columns) and len(set(keys)) == len(keys), (stream, table["name"])
            assert len(set(columns)) == len(columns), (stream, table["name"])
            owner = seen.setdefault(table["name"].lower(), stream)
            assert owner == stream or plan.schema["collisions"], (owner, stream, table["name"])
    all_tables = [t["name"].lower() for plan in plans.values() for t in plan.schema["tables"]]
    assert len(all_tables) == len(set(all_tables))
