"""Tests of the sample load-package generator (no Spark)."""
from __future__ import annotations

import gzip
import json
import re
from collections import Counter, defaultdict
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from lakenorm_app.samples import SampleSpec, sample_catalog, write_catalog, write_sample_packages

SMALL = dict(packages=3, orders=40, customers=15, events=30, seed=11)
LOAD_ID = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"


def read_lines(path: Path) -> list[Any]:
    """Parse a .jsonl or .jsonl.gz file into its JSON values."""
    raw = path.read_bytes()
    text = gzip.decompress(raw).decode("utf-8") if path.name.endswith(".gz") else raw.decode("utf-8")
    return [json.loads(line) for line in text.splitlines()]


def manifest(landing: Path, load_id: str) -> dict[str, Any]:
    """The parsed manifest of one package."""
    return json.loads((landing / load_id / "_manifest.json").read_text(encoding="utf-8"))


def records(landing: Path, load_id: str) -> dict[str, list[dict[str, Any]]]:
    """All records of one package by stream, whatever its format."""
    m, pkg, out = manifest(landing, load_id), landing / load_id, defaultdict(list)
    if m["format"] == "records":
        for name, info in m["streams"].items():
            for f in info["files"]:
                out[name] += read_lines(pkg / f)
    else:
        for f in m["files"]:
            for msg in read_lines(pkg / f):
                if msg["type"] == "RECORD":
                    out[msg["record"]["stream"]].append(msg["record"]["data"])
    return dict(out)


def tree(root: Path) -> dict[str, bytes]:
    """Every file under `root` with its bytes, by relative path."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def ts(value: str) -> datetime:
    """Parse an ISO-8601 timestamp that must carry a timezone."""
    parsed = datetime.fromisoformat(value)
    assert parsed.tzinfo is not None, value
    return parsed


@pytest.mark.parametrize("fmt", ["records", "airbyte"])
@pytest.mark.parametrize("gz", [True, False])
def test_deterministic_bytes(tmp_path: Path, fmt: str, gz: bool) -> None:
    spec = SampleSpec(**SMALL, fmt=fmt, gzip=gz, files_per_stream=2)
    ids_a = write_sample_packages(tmp_path / "a", spec)
    ids_b = write_sample_packages(tmp_path / "b", spec)
    assert ids_a == ids_b
    assert tree(tmp_path / "a") == tree(tmp_path / "b")
    other = write_sample_packages(tmp_path / "c", SampleSpec(**{**SMALL, "seed": 12}, fmt=fmt, gzip=gz))
    assert tree(tmp_path / "a") != tree(tmp_path / "c") and other == ids_a


def test_records_manifest_and_files(tmp_path: Path) -> None:
    spec = SampleSpec(**SMALL)
    ids = write_sample_packages(tmp_path, spec)
    start = datetime(2024, 6, 1, tzinfo=timezone.utc)
    assert ids == [f"{(start + timedelta(hours=i)).timestamp():.6f}" for i in range(3)]
    assert ids[0] == "1717200000.000000"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(ids)
    for i, load_id in enumerate(ids):
        m = manifest(tmp_path, load_id)
        assert set(m) >= {"load_id", "created_at", "source", "format", "streams"}
        assert m["load_id"] == load_id and m["source"] == "shop" and m["format"] == "records"
        assert m["created_at"] == (start + timedelta(hours=i)).strftime("%Y-%m-%dT%H:%M:%SZ")
        assert set(m["streams"]) == {"orders", "customers", "events"}
        assert set(m["state"]) == set(m["streams"])
        for name, info in m["streams"].items():
            lines = 0
            for f in info["files"]:
                assert not Path(f).is_absolute() and ".." not in Path(f).parts
                assert f.startswith(f"{name}/part-") and f.endswith(".jsonl.gz")
                lines += len(read_lines(tmp_path / load_id / f))
            assert lines == info["records"] == getattr(spec, name)
        assert not list((tmp_path / load_id).glob("*.tmp"))


def test_airbyte_manifest_and_messages(tmp_path: Path) -> None:
    spec = SampleSpec(**SMALL, fmt="airbyte", files_per_stream=3)
    for load_id in write_sample_packages(tmp_path, spec):
        m = manifest(tmp_path, load_id)
        assert m["format"] == "airbyte" and m["load_id"] == load_id
        assert len(m["files"]) == 3 and all(f.startswith("messages-") for f in m["files"])
        assert all("files" not in info for info in m["streams"].values())
        msgs = [msg for f in m["files"] for msg in read_lines(tmp_path / load_id / f)]
        kinds = Counter(msg["type"] for msg in msgs)
        assert kinds["LOG"] >= 1 and kinds["STATE"] == 3
        states = [msg["state"]["stream"]["stream_descriptor"]["name"] for msg in msgs if msg["type"] == "STATE"]
        assert sorted(states) == ["customers", "events", "orders"]
        emitted_ms = int(ts(m["created_at"]).timestamp() * 1000)
        per_stream = Counter()
        for msg in msgs:
            if msg["type"] == "RECORD":
                assert msg["record"]["emitted_at"] == emitted_ms
                per_stream[msg["record"]["stream"]] += 1
        assert per_stream == {name: info["records"] for name, info in m["streams"].items()}
        assert per_stream == {"orders": 40, "customers": 15, "events": 30}


def test_same_records_in_both_formats_and_layouts(tmp_path: Path) -> None:
    variants = [SampleSpec(**SMALL), SampleSpec(**SMALL, files_per_stream=4, gzip=False),
                SampleSpec(**SMALL, fmt="airbyte", files_per_stream=2)]
    seen = []
    for n, spec in enumerate(variants):
        ids = write_sample_packages(tmp_path / str(n), spec)
        seen.append([records(tmp_path / str(n), i) for i in ids])
    assert seen[0] == seen[1] == seen[2]


def test_files_per_stream_split_and_plain(tmp_path: Path) -> None:
    load_id = write_sample_packages(tmp_path, SampleSpec(**SMALL, files_per_stream=4, gzip=False))[0]
    m = manifest(tmp_path, load_id)
    for name, info in m["streams"].items():
        assert info["files"] == [f"{name}/part-{i:05d}.jsonl" for i in range(4)]
        sizes = [len(read_lines(tmp_path / load_id / f)) for f in info["files"]]
        assert sum(sizes) == info["records"] and max(sizes) - min(sizes) <= 1 and min(sizes) > 0
        assert not (tmp_path / load_id / info["files"][0]).read_bytes().startswith(b"\x1f\x8b")


def test_more_files_than_records_writes_no_empty_files(tmp_path: Path) -> None:
    spec = SampleSpec(packages=1, orders=2, customers=0, events=1, files_per_stream=5)
    load_id = write_sample_packages(tmp_path, spec)[0]
    m = manifest(tmp_path, load_id)
    assert set(m["streams"]) == {"orders", "events"}
    assert len(m["streams"]["orders"]["files"]) == 2 and len(m["streams"]["events"]["files"]) == 1


def test_gzip_files_are_gzip(tmp_path: Path) -> None:
    load_id = write_sample_packages(tmp_path, SampleSpec(**SMALL, fmt="airbyte"))[0]
    path = tmp_path / load_id / manifest(tmp_path, load_id)["files"][0]
    assert path.name == "messages-00000.jsonl.gz" and path.read_bytes()[:2] == b"\x1f\x8b"


@pytest.mark.parametrize("stream", ["orders", "customers"])
def test_updates_resend_ids_with_later_updated_at(tmp_path: Path, stream: str) -> None:
    ids = write_sample_packages(tmp_path, SampleSpec(**SMALL, update_ratio=0.5))
    history: dict[int, list[datetime]] = defaultdict(list)
    first_package = {r["id"] for r in records(tmp_path, ids[0])[stream]}
    resent = 0
    for load_id in ids:
        for r in records(tmp_path, load_id)[stream]:
            history[r["id"]].append(ts(r["updated_at"]))
            resent += r["id"] in first_package and load_id != ids[0]
    assert resent > 0
    assert any(len(v) > 1 for v in history.values())
    for versions in history.values():
        assert versions == sorted(versions) and len(set(versions)) == len(versions)


def test_no_updates_when_ratio_zero_and_events_unique(tmp_path: Path) -> None:
    ids = write_sample_packages(tmp_path, SampleSpec(**SMALL, update_ratio=0.0))
    for stream, key in (("orders", "id"), ("customers", "id"), ("events", "event_id")):
        keys = [r[key] for i in ids for r in records(tmp_path, i)[stream]]
        assert len(keys) == len(set(keys))
    ids = write_sample_packages(tmp_path / "u", SampleSpec(**SMALL, update_ratio=1.0))
    events = [r["event_id"] for i in ids for r in records(tmp_path / "u", i)["events"]]
    assert len(events) == len(set(events)) == 90


def test_orders_shape(tmp_path: Path) -> None:
    ids = write_sample_packages(tmp_path, SampleSpec(**SMALL))
    orders = [r for i in ids for r in records(tmp_path, i)["orders"]]
    keys = {k for o in orders for k in o["attributes"]}
    assert {"ÜberField", "a.b.c", "Gift Wrap", "utm-source", "CamelCaseKey"} & keys
    assert any(" " in k for k in keys) and any("-" in k for k in keys)
    assert any(d for o in orders for li in o["line_items"] for d in li["discounts"])
    assert any(o["notes"] is None for o in orders) and any(o["tags"] for o in orders)
    stamps = [o["updated_at"] for o in orders]
    assert any(s.endswith("Z") for s in stamps) and any(s[-6] in "+-" for s in stamps)


def test_catalog_shape() -> None:
    cat = sample_catalog()
    modes = {s["stream"]["name"]: (s["destination_sync_mode"], s["primary_key"], s["cursor_field"])
             for s in cat["streams"]}
    assert modes == {"orders": ("append_dedup", [["id"]], ["updated_at"]),
                     "customers": ("append_dedup", [["id"]], ["updated_at"]),
                     "events": ("append", [["event_id"]], ["occurred_at"])}
    orders = cat["streams"][0]["stream"]["json_schema"]["properties"]
    assert orders["updated_at"] == {"type": ["null", "string"], "format": "date-time",
                                    "airbyte_type": "timestamp_with_timezone"}
    assert "properties" not in orders["attributes"] and orders["attributes"]["type"] == ["null", "object"]
    events = cat["streams"][2]["stream"]["json_schema"]["properties"]
    assert "properties" not in events["payload"]
    assert orders["line_items"]["items"]["properties"]["discounts"]["items"]["properties"]
    assert orders["customer"]["properties"]["address"]["properties"]
    cat["streams"][0]["stream"]["json_schema"]["properties"].clear()
    assert sample_catalog()["streams"][0]["stream"]["json_schema"]["properties"]


@pytest.mark.parametrize("fmt", ["records", "airbyte"])
def test_catalog_schemas_valid_and_match_records(tmp_path: Path, fmt: str) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schemas = {s["stream"]["name"]: s["stream"]["json_schema"] for s in sample_catalog()["streams"]}
    validators = {}
    for name, schema in schemas.items():
        jsonschema.Draft7Validator.check_schema(schema)
        validators[name] = jsonschema.Draft7Validator(schema)
    ids = write_sample_packages(tmp_path, SampleSpec(**SMALL, fmt=fmt))
    for load_id in ids:
        for name, rows in records(tmp_path, load_id).items():
            props = schemas[name]["properties"]
            for r in rows:
                validators[name].validate(r)
                assert set(r) == set(props)
                for key, sub in props.items():
                    if sub.get("format") == "date-time" and r[key] is not None:
                        ts(r[key])


def test_write_catalog_roundtrip(tmp_path: Path) -> None:
    path = write_catalog(tmp_path / "nested" / "catalog.json")
    assert path == tmp_path / "nested" / "catalog.json"
    assert json.loads(path.read_text(encoding="utf-8")) == sample_catalog()


@pytest.mark.parametrize("bad", [dict(fmt="csv"), dict(files_per_stream=0), dict(update_ratio=1.5),
                                 dict(orders=-1)])
def test_invalid_spec_rejected(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        SampleSpec(**bad)


def test_load_ids_valid_and_start_with_offset(tmp_path: Path) -> None:
    ids = write_sample_packages(tmp_path, SampleSpec(packages=2, orders=1, customers=1, events=1,
                                                     start="2024-06-01T02:00:00+02:00"))
    assert ids == ["1717200000.000000", "1717203600.000000"]
    assert all(re.match(LOAD_ID, i) for i in ids)
    assert manifest(tmp_path, ids[1])["created_at"] == "2024-06-01T01:00:00Z"
