"""Typed tables under the `airbyte` convention, end to end (SPEC §3, §4.3): names, types, keys and values."""
from __future__ import annotations

import gzip
import json

from normalization_core.configuration.config import parse_config
from normalization_core.io.delta import is_delta_table, read_table
from normalization_core.passes.normalize import normalize_load

STR, INT = {"type": ["null", "string"]}, {"type": ["null", "integer"]}
CARS_SCHEMA = {"type": "object", "properties": {
    "Make": STR,
    "horse power": INT,
    "specs": {"type": ["null", "object"], "properties": {
        "transmission": STR,
        "engine": {"type": ["null", "object"], "properties": {"cylinders": INT}}}},
    "limited_editions": {"type": ["null", "array"], "items": {"type": "object", "properties": {
        "name": STR, "release_year": INT}}},
    "colors": {"type": ["null", "array"], "items": STR},
}}
RECORDS = [
    {"Make": "alfa romeo", "horse power": 247, "colors": ["red", "white"],
     "specs": {"transmission": "6-speed", "engine": {"cylinders": 4}},
     "limited_editions": [{"name": "4C spider", "release_year": 2013}, {"name": "4C italia", "release_year": "?"}]},
    {"Make": "lotus", "horse power": "n/a", "specs": None, "limited_editions": [], "colors": None},
]
META = "struct<changes:array<struct<field:string,change:string,reason:string>>>"


def airbyte_source(tmp_path):
    (tmp_path / "landing").mkdir()
    catalog = {"streams": [{"stream": {"name": "Cars", "json_schema": CARS_SCHEMA}, "sync_mode": "full_refresh",
                            "destination_sync_mode": "append"}]}
    (tmp_path / "catalog.json").write_text(json.dumps(catalog))
    return parse_config({"warehouse": "wh", "sources": [{"name": "garage", "landing": "landing",
                                                         "catalog": "catalog.json", "convention": "airbyte"}]},
                        base_dir=tmp_path)


def land_airbyte_package(landing, load_id: str) -> None:
    folder = landing / load_id
    folder.mkdir()
    messages = [{"type": "RECORD", "record": {"stream": "Cars", "data": r, "emitted_at": 1717200000000 + i}}
                for i, r in enumerate(RECORDS)]
    (folder / "messages.jsonl.gz").write_bytes(gzip.compress("".join(json.dumps(m) + "\n" for m in messages).encode()))
    (folder / "_manifest.json").write_text(json.dumps({
        "load_id": load_id, "created_at": "2024-06-01T00:00:00Z", "source": "garage", "format": "airbyte",
        "files": ["messages.jsonl.gz"], "streams": {"Cars": {"records": len(RECORDS)}}}))


def test_airbyte_convention_writes_airbyte_tables_linked_by_hashids(spark, tmp_path):
    cfg = airbyte_source(tmp_path)
    land_airbyte_package(cfg.source("garage").landing, "L1")
    normalize_load(spark, cfg, "garage", "L1")
    result = normalize_load(spark, cfg, "garage", "L1")  # a re-run changes nothing
    table = lambda name: read_table(spark, cfg.table_path("garage", name))  # noqa: E731

    assert result.streams["Cars"].typed_rows == {
        "cars": 2, "cars_specs": 1, "cars_limited_editions": 2, "cars_specs_engine": 1}
    assert not is_delta_table(spark, cfg.table_path("garage", "cars_colors"))
    cars, specs, engine, editions = (table(n) for n in ("cars", "cars_specs", "cars_specs_engine",
                                                        "cars_limited_editions"))
    assert cars.dtypes == [
        ("make", "string"), ("horse_power", "bigint"), ("specs", "string"), ("limited_editions", "string"),
        ("colors", "string"), ("_airbyte_ab_id", "string"), ("_airbyte_emitted_at", "timestamp"),
        ("_airbyte_load_id", "string"), ("_airbyte_cars_hashid", "string"), ("_airbyte_meta", META),
        ("_airbyte_normalized_at", "timestamp")]
    # children carry the record's id and emitted at, and normalized at, as Airbyte's (and the seed's) do;
    # row keys are named after the nested field, parent keys after the parent's
    link = [("_airbyte_ab_id", "string"), ("_airbyte_emitted_at", "timestamp"), ("_airbyte_load_id", "string")]
    tail = [("_airbyte_root_hashid", "string"), ("_airbyte_meta", META), ("_airbyte_normalized_at", "timestamp")]
    assert specs.dtypes == [("transmission", "string"), ("engine", "string"), *link,
                            ("_airbyte_specs_hashid", "string"), ("_airbyte_cars_foreign_hashid", "string"), *tail]
    assert engine.dtypes == [("cylinders", "bigint"), *link, ("_airbyte_engine_hashid", "string"),
                             ("_airbyte_specs_foreign_hashid", "string"), *tail]
    assert editions.dtypes == [("name", "string"), ("release_year", "bigint"), *link,
                               ("_airbyte_limited_editions_hashid", "string"),
                               ("_airbyte_cars_foreign_hashid", "string"), ("_airbyte_list_idx", "bigint"), *tail]

    by_make = {r["make"]: r for r in cars.collect()}  # 2 rows
    alfa, lotus = by_make["alfa romeo"], by_make["lotus"]
    assert (alfa["horse_power"], lotus["horse_power"]) == (247, None)
    assert [c.field for c in lotus["_airbyte_meta"].changes] == ["horse power"]
    assert json.loads(alfa["specs"]) == RECORDS[0]["specs"]
    assert json.loads(alfa["limited_editions"]) == RECORDS[0]["limited_editions"]
    assert (alfa["colors"], lotus["colors"], lotus["specs"]) == ('["red","white"]', None, None)
    assert json.loads(lotus["limited_editions"]) == []
    alfa_key = alfa["_airbyte_cars_hashid"]

    (spec,) = specs.collect()
    assert (spec["transmission"], json.loads(spec["engine"])) == ("6-speed", {"cylinders": 4})
    assert spec["_airbyte_cars_foreign_hashid"] == spec["_airbyte_root_hashid"] == alfa_key
    (eng,) = engine.collect()
    assert eng["cylinders"] == 4
    assert eng["_airbyte_specs_foreign_hashid"] == spec["_airbyte_specs_hashid"]
    assert (spec["_airbyte_ab_id"], spec["_airbyte_emitted_at"]) == (alfa["_airbyte_ab_id"], alfa["_airbyte_emitted_at"])
    assert eng["_airbyte_root_hashid"] == alfa_key
    rows = editions.orderBy("_airbyte_list_idx").collect()
    assert [(r["name"], r["release_year"], r["_airbyte_list_idx"]) for r in rows] == [
        ("4C spider", 2013, 0), ("4C italia", None, 1)]
    assert {r["_airbyte_cars_foreign_hashid"] for r in rows} == {alfa_key}
    assert [c.field for c in rows[1]["_airbyte_meta"].changes] == ["limited_editions.release_year"]
    edition_keys = {r["_airbyte_limited_editions_hashid"] for r in rows}
    assert len(edition_keys | {alfa_key, lotus["_airbyte_cars_hashid"]}) == 4

    loads = table("_airbyte_loads").collect()
    expected_rows = {"_airbyte_raw_cars": 2, **result.streams["Cars"].typed_rows}
    assert [(r["stream"], r["rows"]) for r in loads] == [("Cars", expected_rows)]
