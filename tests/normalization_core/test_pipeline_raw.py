"""Raw tables (SPEC §3, §10): every line kept exactly, idempotent per load ID, registry rows."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from lakenorm_app.samples import SampleSpec, write_sample_packages
from normalization_core.configuration.config import parse_config
from normalization_core.errors import PackageError, UnknownLoadError
from normalization_core.io.delta import is_delta_table, read_table
from normalization_core.passes.normalize import normalize_load
from normalization_core.passes.pending import pending_packages

CREATED = "2024-06-01T00:00:00Z"


def make_config(tmp_path: Path, convention: str = "native"):
    (tmp_path / "landing").mkdir(exist_ok=True)
    return parse_config({"warehouse": "wh", "sources": [
        {"name": "shop", "landing": "landing", "convention": convention}]}, base_dir=tmp_path)


def write_records_package(landing: Path, load_id: str, files: dict[str, bytes], streams: dict[str, list[str]]):
    folder = landing / load_id
    for rel, data in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)
    manifest = {"load_id": load_id, "created_at": CREATED, "source": "shop", "format": "records",
                "streams": {s: {"files": fs} for s, fs in streams.items()}}
    (folder / "_manifest.json").write_text(json.dumps(manifest))


def raw(spark, cfg, table: str):
    return read_table(spark, cfg.table_path("shop", table))


def encoded(lines: list[str], newline: str = "\n", bom: bool = False) -> bytes:
    return (("\ufeff" if bom else "") + newline.join(lines) + newline).encode("utf-8")


@pytest.mark.parametrize("newline, bom, compress", [("\n", False, True), ("\r\n", True, False)])
def test_raw_rows_equal_the_input_lines(spark, tmp_path, load_case, newline, bom, compress):
    case = load_case("raw/lines.json")["lines"]
    cfg = make_config(tmp_path)
    data = encoded([c["text"] for c in case], newline, bom)
    rel = "s/part-0.jsonl.gz" if compress else "s/part-0.jsonl"
    write_records_package(cfg.source("shop").landing, "L1", {rel: gzip.compress(data) if compress else data},
                          {"things": [rel]})
    result = normalize_load(spark, cfg, "shop", "L1")

    rows = raw(spark, cfg, "_norm_raw_things").orderBy("_norm_line").collect()
    assert [r["_norm_data"] for r in rows] == [c["text"] for c in case]
    assert [r["_norm_error"] for r in rows] == [c["error"] for c in case]
    assert [r["_norm_line"] for r in rows] == list(range(1, len(case) + 1))
    assert {r["_norm_file"] for r in rows} == {rel}
    assert {r["_norm_load_id"] for r in rows} == {"L1"}
    assert len({r["_norm_raw_id"] for r in rows}) == len(case)
    assert str(rows[0]["_norm_extracted_at"]) == "2024-06-01 00:00:00"
    bad = sum(c["error"] is not None for c in case)
    assert (result.streams["things"].raw_lines, result.streams["things"].rejected_lines) == (len(case), bad)


@pytest.mark.slow
def test_renormalizing_a_load_is_idempotent_and_keys_are_stable(spark, tmp_path):
    cfg = make_config(tmp_path)
    ids = write_sample_packages(cfg.source("shop").landing, SampleSpec(packages=2, orders=30, customers=10, events=20))
    normalize_load(spark, cfg, "shop", ids[0])
    normalize_load(spark, cfg, "shop", ids[1])
    before = sorted(r["_norm_raw_id"] for r in raw(spark, cfg, "_norm_raw_orders").collect())
    normalize_load(spark, cfg, "shop", ids[0])
    after = raw(spark, cfg, "_norm_raw_orders")
    assert sorted(r["_norm_raw_id"] for r in after.collect()) == before
    assert after.count() == 60
    loads = raw(spark, cfg, "_norm_loads")
    assert loads.count() == 6  # (load, stream) pairs, not one more per re-run
    assert {(r["stream"], r["raw_lines"]) for r in loads.where(f"load_id = '{ids[0]}'").collect()} == {
        ("orders", 30), ("customers", 10), ("events", 20)}
    assert {r["status"] for r in loads.collect()} == {"normalized"}
    assert pending_packages(spark, cfg, cfg.source("shop")).packages == ()


def test_airbyte_packages_route_records_keep_state_and_quarantine_non_messages(spark, tmp_path):
    cfg = make_config(tmp_path, convention="airbyte")
    landing = cfg.source("shop").landing
    lines = [
        {"type": "LOG", "log": {"level": "INFO", "message": "hi"}},
        {"type": "RECORD", "record": {"stream": "users", "data": {"id": 1, "n": 2.5}, "emitted_at": 1717200000000}},
        {"type": "RECORD", "record": {"stream": "users", "data": {"id": 2}, "emitted_at": 1717200001000}},
        {"type": "RECORD", "record": {"stream": "users", "data": [1, 2], "emitted_at": 1717200002000}},
        {"type": "STATE", "state": {"type": "STREAM", "stream": {"stream_descriptor": {"name": "users"}}}},
    ]
    text = [json.dumps(m) for m in lines] + ["this is not a message"]
    folder = landing / "A1"
    folder.mkdir()
    (folder / "messages.jsonl.gz").write_bytes(gzip.compress(encoded(text)))
    (folder / "_manifest.json").write_text(json.dumps({
        "load_id": "A1", "created_at": CREATED, "source": "shop", "format": "airbyte",
        "files": ["messages.jsonl.gz"], "streams": {"users": {"records": 3}}}))
    result = normalize_load(spark, cfg, "shop", "A1")

    rows = raw(spark, cfg, "_airbyte_raw_users").orderBy("_airbyte_line").collect()
    assert [json.loads(r["_airbyte_data"]) for r in rows] == [{"id": 1, "n": 2.5}, {"id": 2}, [1, 2]]
    assert [r["_airbyte_error"] for r in rows] == [None, None, "JSON value is not an object"]
    assert [str(r["_airbyte_emitted_at"]) for r in rows][:2] == ["2024-06-01 00:00:00", "2024-06-01 00:00:01"]
    assert [r["_airbyte_line"] for r in rows] == [2, 3, 4]
    quarantine = raw(spark, cfg, "_airbyte_quarantine").collect()
    assert [(q["_airbyte_data"], q["_airbyte_line"]) for q in quarantine] == [("this is not a message", 6)]
    assert result.quarantined_lines == 1
    registry = raw(spark, cfg, "_airbyte_loads").collect()
    assert json.loads(registry[0]["state"])[0]["stream"]["stream_descriptor"]["name"] == "users"


def test_a_record_for_a_stream_the_manifest_does_not_list_rejects_the_package(spark, tmp_path):
    cfg = make_config(tmp_path)
    folder = cfg.source("shop").landing / "A2"
    folder.mkdir()
    msg = {"type": "RECORD", "record": {"stream": "ghost", "data": {"id": 1}, "emitted_at": 1}}
    (folder / "m.jsonl").write_text(json.dumps(msg) + "\n")
    (folder / "_manifest.json").write_text(json.dumps({
        "load_id": "A2", "created_at": CREATED, "source": "shop", "format": "airbyte",
        "files": ["m.jsonl"], "streams": {"users": {}}}))
    with pytest.raises(PackageError, match="stream 'ghost'"):
        normalize_load(spark, cfg, "shop", "A2")
    assert not is_delta_table(spark, cfg.table_path("shop", "_norm_raw_users"))


def test_truncated_gzip_fails_the_package_naming_the_file_and_commits_nothing(spark, tmp_path):
    cfg = make_config(tmp_path)
    good = encoded([json.dumps({"id": i, "pad": "x" * 40}) for i in range(5000)])
    whole = gzip.compress(good)
    write_records_package(cfg.source("shop").landing, "T1",
                          {"a/ok.jsonl.gz": whole, "b/cut.jsonl.gz": whole[: len(whole) // 2]},
                          {"alpha": ["a/ok.jsonl.gz"], "beta": ["b/cut.jsonl.gz"]})
    with pytest.raises(PackageError) as err:
        normalize_load(spark, cfg, "shop", "T1")
    assert err.value.file == "b/cut.jsonl.gz"
    assert "truncated" in str(err.value)
    for table in ("_norm_raw_alpha", "_norm_raw_beta", "_norm_loads"):
        assert not is_delta_table(spark, cfg.table_path("shop", table))


def test_unknown_load_id_is_a_clear_error(spark, tmp_path):
    cfg = make_config(tmp_path)
    with pytest.raises(UnknownLoadError, match="no complete load package 'nope'"):
        normalize_load(spark, cfg, "shop", "nope")
