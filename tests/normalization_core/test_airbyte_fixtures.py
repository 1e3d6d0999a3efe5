"""Airbyte's own Basic Normalization fixtures under `convention: airbyte` (tests/cases/airbyte_fixtures).

Names (tables, row and parent keys, data columns) are checked from the catalogs alone; row counts by
normalizing the fixtures' messages as one load.
"""
from __future__ import annotations

import json

import pytest

from normalization_core.configuration.catalog import parse_catalog
from normalization_core.configuration.config import parse_config
from normalization_core.io.delta import is_delta_table, read_table
from normalization_core.passes.normalize import normalize_load
from normalization_core.plans.source_tables import raw_table_name
from normalization_core.plans.stream_plans import stream_plans
from tests.conftest import CASES

FIXTURES = CASES / "airbyte_fixtures"
EXPECTED = json.loads((FIXTURES / "expected.json").read_text(encoding="utf-8"))
LIMIT = 63


def fixture_source(tmp_path, catalog: dict, name: str):
    (tmp_path / "landing").mkdir(exist_ok=True)
    (tmp_path / "catalog.json").write_text(json.dumps(catalog), encoding="utf-8")
    config = parse_config({"warehouse": "wh", "sources": [{"name": name, "landing": "landing",
                                                          "catalog": "catalog.json", "convention": "airbyte"}]},
                          base_dir=tmp_path)
    return config, config.source(name)


def catalog_of(case: str) -> dict:
    return json.loads((FIXTURES / f"{case}_catalog.json").read_text(encoding="utf-8"))


def tables_by_name(source) -> dict[str, tuple[str, dict]]:
    return {t["name"]: (stream, t) for stream, plan in stream_plans(source).items() for t in plan.schema["tables"]}


@pytest.mark.parametrize("case", ["nested_streams", "simple_streams"])
def test_fixture_catalogs_give_airbytes_tables_keys_and_columns(tmp_path, case):
    expected = EXPECTED[case]
    _, source = fixture_source(tmp_path, catalog_of(case), expected["source"])
    tables = tables_by_name(source)
    assert sorted(tables) == sorted(expected["tables"])
    for name, want in expected["tables"].items():
        stream, table = tables[name]
        assert (stream, table["parent"]) == (want["stream"], want["parent"]), name
        assert [c["name"] for c in table["columns"]] == want["columns"], name
        assert table["row_key"] == want["row_key"], name
        assert table.get("parent_key") == want.get("parent_key"), name
        identifiers = [name, table["row_key"], *(c["name"] for c in table["columns"])]
        assert max(map(len, identifiers)) <= LIMIT, name
    raw = {raw_table_name(source, s) for s in {stream for stream, _ in tables.values()}}
    assert set(expected["raw_tables"]) <= raw


@pytest.mark.parametrize("case, namespace, source_name", [
    ("un-nesting_collisions", "namespace", "src"),
    ("long_name_truncate_collisions", None, "schema_test"),
])
def test_colliding_streams_get_airbytes_hashed_names_and_the_collision_is_recorded(tmp_path, case, namespace,
                                                                                   source_name):
    """Airbyte's naming unit-test catalogs; a lakehouse source is one schema, so only the streams of one
    namespace are taken (the others are Airbyte's same stream names in other schemas)."""
    catalog = catalog_of(case)
    catalog["streams"] = [s for s in catalog["streams"] if s["stream"].get("namespace") == namespace]
    expected_names = json.loads((FIXTURES / f"{case}_catalog_expected_postgres_names.json").read_text("utf-8"))
    schema = namespace or source_name
    want = {key.split(".", 1)[1]: entry["table"] for key, entry in expected_names.items()
            if entry["schema"] == schema}
    _, source = fixture_source(tmp_path, catalog, source_name)
    plans = stream_plans(source)  # no refusal
    got = {}
    for stream, plan in plans.items():
        for table in plan.schema["tables"]:
            json_path = [stream, *table["json_path"]]  # keyed as Airbyte's registry: joined path, then leaf
            got[f"{'_'.join(json_path)}.{json_path[-1]}"] = table["name"]
    assert got == want
    for plan in plans.values():
        recorded = [c for c in plan.schema["collisions"] if c["table"] is None]
        assert recorded, plan.settings.name
        assert set(recorded[0]["resolved"].values()) <= set(got.values())


def test_a_plain_catalog_without_destination_sync_mode_is_append():
    catalog = catalog_of("un-nesting_collisions")
    for entry in catalog["streams"]:
        entry.pop("destination_sync_mode")
        entry.pop("sync_mode")
    catalog["streams"] = catalog["streams"][:2]
    streams = parse_catalog(catalog)
    assert {s.destination_sync_mode for s in streams.values()} == {"append"}
    assert streams["simple"].namespace == "namespace"


def land_messages(landing, load_id: str, messages: str, source: str) -> None:
    folder = landing / load_id
    folder.mkdir()
    (folder / "messages.jsonl").write_text(messages, encoding="utf-8")
    counts: dict[str, int] = {}
    for line in messages.splitlines():
        if line.startswith("{"):
            stream = json.loads(line)["record"]["stream"]
            counts[stream] = counts.get(stream, 0) + 1
    (folder / "_manifest.json").write_text(json.dumps({
        "load_id": load_id, "created_at": "2024-06-01T00:00:00Z", "source": source, "format": "airbyte",
        "files": ["messages.jsonl"], "streams": {s: {"records": n} for s, n in counts.items()}}))


@pytest.mark.parametrize("case", ["nested_streams", "simple_streams"])
def test_fixture_messages_give_airbytes_row_counts(spark, tmp_path, case):
    expected = EXPECTED[case]
    config, source = fixture_source(tmp_path, catalog_of(case), expected["source"])
    messages = (FIXTURES / f"{case}_messages.txt").read_text(encoding="utf-8")
    land_messages(source.landing, "L1", messages, source.name)
    result = normalize_load(spark, config, source.name, "L1")
    table = lambda name: read_table(spark, config.table_path(source.name, name))  # noqa: E731

    assert {s.raw_table: s.raw_lines for s in result.streams.values()} == expected["raw_tables"]
    for name, want in expected["tables"].items():
        path = config.table_path(source.name, name)
        if want["rows"] is None:  # a stream without records writes no table
            assert not is_delta_table(spark, path), name
            continue
        assert table(name).count() == want["rows"], name  # metadata: counts only
        if "scd_rows" in want:
            assert table(f"{name}_scd").count() == want["scd_rows"], name
        if want["parent"] is not None:
            columns = table(name).columns
            assert {"_airbyte_ab_id", "_airbyte_emitted_at", "_airbyte_normalized_at",
                    want["row_key"], want["parent_key"]} <= set(columns), name
            assert max(map(len, columns)) <= LIMIT, name
    for name, by_column in expected.get("values", {}).items():
        for column, values in by_column.items():
            rows = table(name).select(column).collect()  # metadata-sized: a few fixture rows
            assert sorted(r[0] for r in rows) == values, (name, column)
