"""Raw keeps each record's text as the producer wrote it, for every input kind and convention (SPEC §3):
digits a double cannot hold, `1.50`, `-0.0`, unicode escapes and duplicate keys included, and the typed
tables rebuilt from raw equal those of the first load (SPEC §7)."""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from normalization_core.configuration.config import parse_config
from normalization_core.io.delta import read_table
from normalization_core.naming.conventions import system_names
from normalization_core.passes.normalize import normalize_loads
from normalization_core.passes.pending import pending_packages
from normalization_core.passes.rebuild import rebuild_stream
from normalization_core.plans.source_tables import SourceTables

CASE = json.loads((Path(__file__).parents[2] / "cases" / "raw" / "exact_records.json").read_text(encoding="utf-8"))
TEXTS = [r["text"] for r in CASE["records"]]
COMPACT = [r["text"] for r in CASE["records"] if r["compact"]]
EMITTED = 1717200000000
SINGER_SCHEMA = {"type": "object", "properties": {
    "id": {"type": "integer"}, "amount": {"type": "number"}, "p": {"type": "number"}, "c": {"type": "number"},
    "name": {"type": "string"}}}


def _write(path: Path, lines: list[str]) -> None:
    """The lines as UTF-8, but for U+DC80..U+DCFF: bytes that are not UTF-8 (Python's `surrogateescape`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes("".join(line + "\n" for line in lines).encode("utf-8", "surrogateescape"))
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


# Every input kind, each convention twice: the reader keeps the text; a convention only names the table and columns.
KIND_CONVENTIONS = [("records", "dlt"), ("airbyte_messages", "airbyte"), ("singer", "native"),
                    ("airbyte_destination_v1", "dlt"), ("airbyte_destination_v2", "native"),
                    ("airbyte_destination_v2_flat", "airbyte")]


def test_every_kind_and_convention_is_covered():
    assert {k for k, _ in KIND_CONVENTIONS} == set(KINDS)
    assert sorted(c for _, c in KIND_CONVENTIONS) == sorted(["native", "dlt", "airbyte"] * 2)


@pytest.mark.parametrize(("kind", "convention"), KIND_CONVENTIONS)
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


@pytest.mark.parametrize("kind", ["airbyte_messages", "singer", "airbyte_destination_v2", "records"])
def test_tables_rebuilt_from_raw_equal_the_first_load(spark, tmp_path, kind):
    """Typed from a schema (the catalog, or the Singer SCHEMA message: `number` is a double, SPEC §5.1),
    or inferred (`records`: the stream's stored schema is what rebuild types with)."""
    settings = {} if kind in ("singer", "records") else {"catalog": _catalog(tmp_path)}
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


def member_span(line: str, path: tuple[str, ...]) -> str:
    """The text of the value at `path` in `line`, found by Python's JSON scanner (the test's own oracle)."""
    decoder, at = json.JSONDecoder(), 0
    skip = lambda i: len(line) - len(line[i:].lstrip())  # noqa: E731
    at = skip(at)
    for depth, key in enumerate(path):
        assert line[at] == "{"
        at += 1
        while True:
            name, at = decoder.raw_decode(line, skip(at))
            at = skip(at)
            assert line[at] == ":"
            start = skip(at + 1)
            _, end = decoder.raw_decode(line, start)
            if name == key:
                break
            at = skip(end)
            assert line[at] == ","
            at += 1
        if depth == len(path) - 1:
            return line[start:end]
        at = start
    raise AssertionError(path)


def _raw_texts(spark, config, stream: str) -> list[str]:
    names = system_names(config.source("shop").convention)
    raw = read_table(spark, SourceTables.of(config, "shop").raw_path(stream)).orderBy(names.file, names.line)
    return [r[names.data] for r in raw.collect()]


def test_a_singer_sdk_taps_decimals_are_kept_in_raw(spark, tmp_path):
    """Meltano's Singer SDK writes a `numeric` it reads as Decimal with every digit: raw keeps them."""
    from tests.normalization_core.inputs.test_singer_sdk_tap import TAP

    payments = tmp_path / "payments.json"
    payments.write_text('[{"id": 1, "amount": 12345678901234567891.1234567891, "big": 123456789012345678901234},'
                        ' {"id": 2, "amount": 3170.00, "big": 7}, {"id": 3, "amount": 1.50, "big": -0}]')
    (tmp_path / "users.json").write_text("[]")
    (tmp_path / "tap.json").write_text(json.dumps({"records_file": str(tmp_path / "users.json"),
                                                   "payments_file": str(payments)}))
    run = tmp_path / "landing" / "run1.jsonl"
    run.parent.mkdir()
    with run.open("wb") as out:
        subprocess.run([sys.executable, str(TAP), "--config", str(tmp_path / "tap.json")], stdout=out, check=True,
                       stderr=subprocess.DEVNULL)
    os.utime(run, (1717300000, 1717300000))
    records = [line for line in run.read_text().splitlines() if json.loads(line)["type"] == "RECORD"]
    expected = [member_span(line, ("record",)) for line in records]
    assert "12345678901234567891.1234567891" in expected[0] and '"amount":3170.00' in expected[1]
    config = parse_config({"warehouse": "wh", "sources": [{"name": "shop", "landing": "landing", "input": "singer",
                                                           "settle_seconds": 0}]}, base_dir=tmp_path)
    normalize_loads(spark, config, "shop", ["run1"])
    assert _raw_texts(spark, config, "payments") == expected
    current = {r.id: r for r in read_table(spark, config.table_path("shop", "payments")).collect()}
    assert (current[1].amount, current[2].amount, current[3].amount) == (12345678901234567891.1234567891, 3170.0, 1.5)


def test_airbytes_own_fixture_messages_are_kept_in_raw_as_written(spark, tmp_path):
    """Messages from Airbyte's repository (spaced as Airbyte wrote them): each record's `data` byte for byte."""
    fixture = Path(__file__).parents[2] / "cases" / "airbyte_fixtures" / "nested_streams_messages.txt"
    lines = [line for line in fixture.read_text(encoding="utf-8").splitlines() if line.startswith("{")]
    streams = sorted({json.loads(line)["record"]["stream"] for line in lines})
    folder = tmp_path / "landing" / "L1"
    _write(folder / "messages.jsonl", lines)
    (folder / "_manifest.json").write_text(json.dumps({
        "load_id": "L1", "created_at": "2024-06-01T00:00:00Z", "source": "shop", "format": "airbyte",
        "files": ["messages.jsonl"], "streams": {s: {"records": 1} for s in streams}}))
    config = parse_config({"warehouse": "wh", "sources": [{"name": "shop", "landing": "landing"}]}, base_dir=tmp_path)
    normalize_loads(spark, config, "shop", ["L1"])
    for stream in streams:
        mine = [line for line in lines if json.loads(line)["record"]["stream"] == stream]
        assert _raw_texts(spark, config, stream) == [member_span(line, ("record", "data")) for line in mine], stream


def test_dlt_extracts_items_are_kept_in_raw_as_written(spark, tmp_path):
    """dlt's real `extract()`: each item of a typed-jsonl line as dlt wrote it (its type marks dropped)."""
    from decimal import Decimal

    import dlt

    os.environ.setdefault("RUNTIME__DLTHUB_TELEMETRY", "false")
    items = [{"id": i, "amount": Decimal("12345678901234567891.1234567891"), "f": 3170.5, "s": 'x:1.0,"]'}
             for i in range(3)]
    pipeline = dlt.pipeline(pipeline_name="shop", pipelines_dir=str(tmp_path / "pipes"), dataset_name="shop")
    load_id = pipeline.extract(dlt.resource(items, name="events")).loads_ids[-1]
    landing = tmp_path / "pipes" / "shop" / "normalize" / "extracted"
    [job] = (landing / load_id / "new_jobs").glob("events.*")
    decoder, expected = json.JSONDecoder(), []
    text = gzip.decompress(job.read_bytes()) if job.name.endswith(".gz") else job.read_bytes()
    for line in text.decode("utf-8").splitlines():
        at = 1
        while line[at] != "]":
            _, end = decoder.raw_decode(line, len(line) - len(line[at:].lstrip()))
            expected.append(line[len(line) - len(line[at:].lstrip()):end].replace('"\uf026', '"'))
            at = end + 1 if line[end] == "," else end
    config = parse_config({"warehouse": "wh", "sources": [{"name": "shop", "landing": str(landing),
                                                           "input": "dlt_extract"}]}, base_dir=tmp_path)
    normalize_loads(spark, config, "shop", [load_id])
    assert len(expected) == 3 and '"12345678901234567891.1234567891"' in expected[0]
    assert _raw_texts(spark, config, "events") == expected
