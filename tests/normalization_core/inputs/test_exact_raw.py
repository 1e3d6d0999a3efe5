"""Raw keeps each record's text as the producer wrote it, for every input kind and convention (SPEC §3):
digits a double cannot hold, `1.50`, `-0.0`, unicode escapes and duplicate keys included, and the typed
tables rebuilt from raw equal those of the first load (SPEC §7)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from normalization_core.config import parse_config
from normalization_core.conventions import system_names
from normalization_core.io.delta import read_table
from normalization_core.pipeline import normalize_loads, pending_packages
from normalization_core.rebuild import rebuild_stream
from normalization_core.source_tables import SourceTables

CASE = json.loads((Path(__file__).parents[2] / "cases" / "raw" / "exact_records.json").read_text(encoding="utf-8"))
TEXTS = [r["text"] for r in CASE["records"]]
COMPACT = [r["text"] for r in CASE["records"] if r["compact"]]
EMITTED = 1717200000000
SINGER_SCHEMA = {"type": "object", "properties": {
    "id": {"type": "integer"}, "amount": {"type": "number"}, "p": {"type": "number"}, "c": {"type": "number"},
    "name": {"type": "string"}}}


def _write(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    os.utime(path, (1717300000, 1717300000))


def _package(landing: Path, fmt: str, lines: list[str]) -> None:
    folder = landing / "1717200000.1"
    _write(folder / "events.jsonl", lines)
    streams = {"events": {"files": ["events.jsonl"]} if fmt == "records" else {"records": len(lines)}}
    manifest = {"load_id": "1717200000.1", "created_at": "2024-06-01T00:00:00Z", "source": "shop", "format": fmt,
                "streams": streams, **({"files": ["events.jsonl"]} if fmt == "airbyte" else {})}
    (folder / "_manifest.json").write_text(json.dumps(manifest), encoding="utf-8")


def _records_package(landing: Path, texts: list[str]) -> None:
    _package(landing, "records", texts)


def _airbyte_package(landing: Path, texts: list[str]) -> None:
    _package(landing, "airbyte", [
        f'{{"type":"RECORD","record":{{"stream":"events","data":{t},"emitted_at":{EMITTED}}}}}' for t in texts])


def _singer_run(landing: Path, texts: list[str]) -> None:
    schema = json.dumps({"type": "SCHEMA", "stream": "events", "schema": SINGER_SCHEMA, "key_properties": []})
    _write(landing / "run1.jsonl", [schema, *(
        f'{{"type": "RECORD", "stream": "events", "record": {t}, "time_extracted": "2024-06-01T00:00:00Z"}}'
        for t in texts)])


def _destination_v1(landing: Path, texts: list[str]) -> None:
    _write(landing / "public" / "events" / "2024_06_01_1717200000000_0.jsonl", [
        f'{{"_airbyte_ab_id":"ab{i}","_airbyte_emitted_at":{EMITTED},"_airbyte_data":{t}}}'
        for i, t in enumerate(texts)])


def _destination_v2(landing: Path, texts: list[str]) -> None:
    _write(landing / "public" / "events" / "2024_06_01_1717200000000_0.jsonl", [
        f'{{"_airbyte_raw_id":"r{i}","_airbyte_extracted_at":{EMITTED},"_airbyte_generation_id":0,'
        f'"_airbyte_meta":{{"sync_id":7,"changes":[]}},"_airbyte_data":{t}}}' for i, t in enumerate(texts)])


def _destination_v2_flat(landing: Path, texts: list[str]) -> None:
    """Root-level flattening: the record's members beside Airbyte's own."""
    _write(landing / "public" / "events" / "2024_06_01_1717200000000_0.jsonl", [
        f'{{"_airbyte_raw_id":"r{i}","_airbyte_extracted_at":{EMITTED},"_airbyte_meta":{{"sync_id":7,"changes":[]}},'
        f'{t[1:-1]},"_airbyte_generation_id":0}}' for i, t in enumerate(texts)])


KINDS = {
    "records": ("packages", _records_package, TEXTS),
    "airbyte_messages": ("packages", _airbyte_package, TEXTS),
    "singer": ("singer", _singer_run, TEXTS),
    "airbyte_destination_v1": ("airbyte_destination", _destination_v1, TEXTS),
    "airbyte_destination_v2": ("airbyte_destination", _destination_v2, TEXTS),
    "airbyte_destination_v2_flat": ("airbyte_destination", _destination_v2_flat, COMPACT),
}


def _normalized(spark, tmp_path, kind: str, convention: str, **settings):
    input_kind, write, texts = KINDS[kind]
    write(tmp_path / "landing", texts)
    config = parse_config({"warehouse": "wh", "sources": [{
        "name": "shop", "landing": "landing", "input": input_kind, "convention": convention,
        "settle_seconds": 0, **settings}]}, base_dir=tmp_path)
    [package] = pending_packages(spark, config, config.source("shop")).packages
    normalize_loads(spark, config, "shop", [package.load_id])
    return config, texts


@pytest.mark.parametrize("convention", ["native", "dlt", "airbyte"])
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_raw_keeps_the_producers_record_text_byte_for_byte(spark, tmp_path, kind, convention):
    config, texts = _normalized(spark, tmp_path, kind, convention)
    names = system_names(convention)
    raw = read_table(spark, SourceTables.of(config, "shop").raw_path("events"))
    kept = [r[names.data] for r in raw.orderBy(names.line).collect()]
    assert kept == texts
    assert raw.where(raw[names.error].isNotNull()).count() == 0


def _catalog(tmp_path: Path) -> str:
    stream = {"stream": {"name": "events", "json_schema": SINGER_SCHEMA, "supported_sync_modes": ["full_refresh"]},
              "sync_mode": "full_refresh", "destination_sync_mode": "append"}
    (tmp_path / "catalog.json").write_text(json.dumps({"streams": [stream]}), encoding="utf-8")
    return "catalog.json"


@pytest.mark.parametrize("kind", ["airbyte_messages", "singer", "airbyte_destination_v2"])
def test_tables_rebuilt_from_raw_equal_the_first_load(spark, tmp_path, kind):
    """Typed from a schema (the catalog, or the Singer SCHEMA message): `number` is a double (SPEC §5.1)."""
    settings = {} if kind == "singer" else {"catalog": _catalog(tmp_path)}
    config, texts = _normalized(spark, tmp_path, kind, "native", **settings)
    path = config.table_path("shop", "events")

    def typed() -> list[dict]:
        table = read_table(spark, path).drop("_norm_normalized_at")
        return [r.asDict(recursive=True) for r in table.orderBy("_norm_raw_id").collect()]

    first = typed()
    by_id = {r["id"]: r for r in first}
    assert {i: (r["p"], r["c"]) for i, r in by_id.items()} == {
        1: (1.5, 3170.0), 2: (1500.0, None), 4: (100.0, None), None: (None, None)}
    assert by_id[1]["amount"] == 12345678901234567891.1234567891
    # Duplicate keys: no VARIANT holds the record, so it is not typed, and says so (raw keeps it whole).
    assert by_id[None]["_norm_meta"]["changes"] == [
        {"field": "$", "change": "NULLED", "reason": "DESTINATION_SERIALIZATION_ERROR"}]
    rebuild_stream(spark, config, "shop", "events")
    assert typed() == first
