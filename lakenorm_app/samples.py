"""Deterministic sample load packages (SPEC §2.1) and their catalog (SPEC §2.2), for the demo and tests."""
from __future__ import annotations

import copy
import gzip
import json
import os
import random
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Literal

Record = dict[str, Any]
FORMATS = ("records", "airbyte")
STATUSES = ["pending", "paid", "shipped", "delivered", "refunded", "cancelled"]
CITIES = ["Berlin", "London", "New York", "São Paulo", "Zürich", "東京", "Lagos", "Mumbai"]
TAGS = ["gift", "priority", "b2b", "repeat", "promo", "fragile", "intl"]
ODD_KEYS = ["Gift Wrap", "utm-source", "2nd_choice", "CamelCaseKey", "weird__double", "ÜberField", "a.b.c"]
NAMES = ["Ada Lovelace", "Alan Turing", "Grace Hopper", "Edsger Dijkstra", "Barbara Liskov"]
TIERS = ["bronze", "silver", "gold", "platinum"]
EVENT_TYPES = ["click", "view", "add_to_cart", "checkout", "login", "logout"]
OFFSET_HOURS = [-5.0, 0.0, 1.0, 5.5]
CURSORS = {"orders": "updated_at", "customers": "updated_at", "events": "occurred_at"}


@dataclass(frozen=True)
class SampleSpec:
    """What to generate: sizes per package, update share, file layout and seed."""

    packages: int = 3
    orders: int = 200
    customers: int = 50
    events: int = 300
    update_ratio: float = 0.3
    fmt: Literal["records", "airbyte"] = "records"
    files_per_stream: int = 1
    gzip: bool = True
    seed: int = 7
    start: str = "2024-06-01T00:00:00"
    source: str = "shop"

    def __post_init__(self) -> None:
        """Reject specs that cannot produce valid packages."""
        if self.fmt not in FORMATS:
            raise ValueError(f"fmt must be one of {FORMATS}, got {self.fmt!r}")
        if min(self.packages, self.orders, self.customers, self.events) < 0:
            raise ValueError("packages, orders, customers and events must be >= 0")
        if self.files_per_stream < 1:
            raise ValueError(f"files_per_stream must be >= 1, got {self.files_per_stream}")
        if not 0.0 <= self.update_ratio <= 1.0:
            raise ValueError(f"update_ratio must be within [0, 1], got {self.update_ratio}")

    def start_utc(self) -> datetime:
        """The created_at of the first package, as an aware UTC datetime."""
        ts = datetime.fromisoformat(self.start)
        return ts.replace(tzinfo=timezone.utc) if ts.tzinfo is None else ts.astimezone(timezone.utc)


def _iso(ts: datetime, rnd: random.Random) -> str:
    """ISO-8601 text: mostly UTC with Z and milliseconds, sometimes an explicit offset."""
    if rnd.random() < 0.7:
        return ts.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    local = ts.astimezone(timezone(timedelta(hours=rnd.choice(OFFSET_HOURS))))
    return local.isoformat(timespec="seconds")


def _utc_z(ts: datetime) -> str:
    """UTC ISO-8601 with a Z suffix."""
    return ts.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def _line_item(rnd: random.Random) -> Record:
    """One order line with zero to two discounts."""
    discounts = [{"code": rnd.choice(["WELCOME", "VIP10", "BF2024"]), "amount": round(rnd.uniform(0.5, 20), 2)}
                 for _ in range(rnd.choice([0, 0, 1, 2]))]
    return {"sku": f"SKU-{rnd.randint(1, 5000):05d}", "qty": rnd.randint(1, 4),
            "price": round(rnd.uniform(1, 300), 2), "discounts": discounts}


def _order_customer(rnd: random.Random) -> Record:
    """The customer embedded in an order; the address is sometimes null (guest checkout)."""
    address = None if rnd.random() < 0.05 else {
        "city": rnd.choice(CITIES), "zip": f"{rnd.randint(0, 99999):05d}",
        "country": rnd.choice(["DE", "GB", "US", "BR", "CH", "JP"])}
    return {"id": rnd.randint(1, 50_000), "email": f"user{rnd.randint(1, 50_000)}@example.com",
            "name": rnd.choice(NAMES), "vip": rnd.random() < 0.1, "address": address}


def _order(oid: int, version: int, base: datetime, rnd: random.Random) -> Record:
    """Version `version` of order `oid`: each version has a later updated_at than the last."""
    created = base + timedelta(minutes=oid)
    updated = created + timedelta(hours=version * 7 + rnd.random())
    items = [_line_item(rnd) for _ in range(rnd.randint(1, 5))]
    status = STATUSES[min(version + 1, len(STATUSES) - 1)] if version else rnd.choice(STATUSES[:2])
    return {
        "id": oid,
        "created_at": _iso(created, rnd),
        "updated_at": _iso(updated, rnd),
        "shipped_at": _iso(updated, rnd) if status in ("shipped", "delivered") else None,
        "status": status,
        "total": round(sum(i["qty"] * i["price"] for i in items), 2),
        "currency": rnd.choice(["USD", "EUR", "GBP"]),
        "customer": _order_customer(rnd),
        "line_items": items,
        "tags": rnd.sample(TAGS, rnd.randint(0, 3)),
        "notes": None if rnd.random() < 0.8 else "leave at the door",
        "attributes": {k: rnd.choice([True, 1, "x", 2.5, None]) for k in rnd.sample(ODD_KEYS, rnd.randint(0, 3))},
    }


def _customer(cid: int, version: int, base: datetime, rnd: random.Random) -> Record:
    """Version `version` of customer `cid`: the tier climbs and updated_at moves later."""
    return {"id": cid, "email": f"user{cid}@example.com", "name": f"{rnd.choice(NAMES)} {cid}",
            "tier": TIERS[min(version, len(TIERS) - 1)],
            "updated_at": _iso(base + timedelta(days=version, seconds=cid), rnd), "deleted": False}


def _event(eid: int, base: datetime, rnd: random.Random) -> Record:
    """One append-only event with a small schemaless payload."""
    return {"event_id": f"ev-{eid:09d}", "type": rnd.choice(EVENT_TYPES),
            "occurred_at": _iso(base + timedelta(seconds=eid * 3), rnd), "user_id": rnd.randint(1, 50_000),
            "payload": {k: rnd.randint(0, 100) for k in rnd.sample(["x", "y", "page", "ref", "ms"], 3)}}


class _Generator:
    """Stateful record source: tracks issued ids and their versions across packages."""

    def __init__(self, spec: SampleSpec) -> None:
        """Seed the generator from the spec."""
        self.spec = spec
        self.rnd = random.Random(spec.seed)
        self.base = spec.start_utc() - timedelta(days=30)
        self.next_id = {"orders": 1, "customers": 1, "events": 1}
        self.versions: dict[tuple[str, int], int] = {}

    def _pick(self, stream: str, package: int) -> tuple[int, int]:
        """A new id, or (after the first package, with update_ratio) an earlier one; returns (id, version)."""
        issued = self.next_id[stream] - 1
        if package and issued and self.rnd.random() < self.spec.update_ratio:
            rid = self.rnd.randint(1, issued)
        else:
            rid = self.next_id[stream]
            self.next_id[stream] += 1
        version = self.versions[(stream, rid)] = self.versions.get((stream, rid), -1) + 1
        return rid, version

    def package(self, index: int) -> dict[str, list[Record]]:
        """All records of package `index`, by stream; streams with no records are left out."""
        s, rnd, base = self.spec, self.rnd, self.base
        orders = [_order(*self._pick("orders", index), base, rnd) for _ in range(s.orders)]
        customers = [_customer(*self._pick("customers", index), base, rnd) for _ in range(s.customers)]
        events = []
        for _ in range(s.events):
            events.append(_event(self.next_id["events"], base, rnd))
            self.next_id["events"] += 1
        streams = {"orders": orders, "customers": customers, "events": events}
        return {name: rows for name, rows in streams.items() if rows}


def _chunks(items: list[Any], n: int) -> list[list[Any]]:
    """Split `items` into at most `n` contiguous, non-empty, near-equal chunks."""
    k = max(1, min(n, len(items)))
    q, r = divmod(len(items), k)
    out, pos = [], 0
    for i in range(k):
        size = q + (1 if i < r else 0)
        out.append(items[pos:pos + size])
        pos += size
    return out


def _write_jsonl(path: Path, values: list[Any], compress: bool) -> None:
    """Write one JSON value per line, gzipped with a fixed header (mtime 0) so bytes are reproducible."""
    data = "".join(json.dumps(v, ensure_ascii=False) + "\n" for v in values).encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(data, mtime=0) if compress else data)


def _stream_state(stream: str, rows: list[Record], load_id: str) -> Record:
    """The extractor's cursor state for a stream after this package."""
    cursor = CURSORS[stream]
    latest = max((r[cursor] for r in rows), key=datetime.fromisoformat)
    return {"load_id": load_id, "cursor_field": [cursor], "cursor": latest}


def _airbyte_messages(streams: dict[str, list[Record]], emitted_ms: int, load_id: str) -> list[Record]:
    """LOG, then each stream's RECORD messages followed by its STATE message, then LOG."""
    msgs: list[Record] = [{"type": "LOG", "log": {"level": "INFO", "message": f"sync {load_id} started"}}]
    for name, rows in streams.items():
        msgs += [{"type": "RECORD", "record": {"stream": name, "data": r, "emitted_at": emitted_ms}} for r in rows]
        msgs.append({"type": "STATE", "state": {"type": "STREAM", "stream": {
            "stream_descriptor": {"name": name}, "stream_state": _stream_state(name, rows, load_id)}}})
    msgs.append({"type": "LOG", "log": {"level": "INFO", "message": f"sync {load_id} finished"}})
    return msgs


def _write_manifest(pkg: Path, manifest: Record) -> None:
    """Write _manifest.json last and atomically (temp file + os.replace): the package is then complete."""
    tmp = pkg / "_manifest.json.tmp"
    tmp.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, pkg / "_manifest.json")


def _write_package(pkg: Path, spec: SampleSpec, created: datetime, streams: dict[str, list[Record]]) -> None:
    """Write the data files of one package, then its manifest."""
    ext = ".jsonl.gz" if spec.gzip else ".jsonl"
    manifest: Record = {"load_id": pkg.name, "created_at": _utc_z(created), "source": spec.source,
                        "format": spec.fmt, "streams": {}}
    if spec.fmt == "records":
        for name, rows in streams.items():
            files = []
            for i, chunk in enumerate(_chunks(rows, spec.files_per_stream)):
                files.append(f"{name}/part-{i:05d}{ext}")
                _write_jsonl(pkg / files[-1], chunk, spec.gzip)
            manifest["streams"][name] = {"files": files, "records": len(rows)}
    else:
        msgs = _airbyte_messages(streams, int(created.timestamp() * 1000), pkg.name)
        manifest["files"] = []
        for i, chunk in enumerate(_chunks(msgs, spec.files_per_stream)):
            manifest["files"].append(f"messages-{i:05d}{ext}")
            _write_jsonl(pkg / manifest["files"][-1], chunk, spec.gzip)
        manifest["streams"] = {name: {"records": len(rows)} for name, rows in streams.items()}
    manifest["state"] = {name: _stream_state(name, rows, pkg.name) for name, rows in streams.items()}
    _write_manifest(pkg, manifest)


def write_sample_packages(landing_dir: Path | str, spec: SampleSpec | None = None) -> list[str]:
    """Write `spec.packages` complete load packages under `landing_dir`; return their load IDs in arrival order."""
    spec = spec or SampleSpec()
    landing = Path(landing_dir)
    gen, start = _Generator(spec), spec.start_utc()
    load_ids = []
    for i in range(spec.packages):
        created = start + timedelta(hours=i)
        load_id = f"{created.timestamp():.6f}"
        pkg = landing / load_id
        pkg.mkdir(parents=True, exist_ok=True)
        _write_package(pkg, spec, created, gen.package(i))
        load_ids.append(load_id)
    return load_ids


def _nullable(schema: Record) -> Record:
    """The same schema with null allowed."""
    return {**schema, "type": ["null", schema["type"]]}


def _props(**fields: Record) -> Record:
    """A nullable object schema with the given properties."""
    return {"type": ["null", "object"], "properties": fields}


TS: Record = {"type": ["null", "string"], "format": "date-time", "airbyte_type": "timestamp_with_timezone"}
STR, INT, NUM, BOOL = ({"type": ["null", t]} for t in ("string", "integer", "number", "boolean"))


def _orders_schema() -> Record:
    """JSON Schema of the orders stream."""
    discount = {"type": "object", "properties": {"code": STR, "amount": NUM}}
    item = {"type": "object", "properties": {"sku": STR, "qty": INT, "price": NUM,
                                             "discounts": {"type": ["null", "array"], "items": discount}}}
    customer = _props(id=INT, email=STR, name=STR, vip=BOOL, address=_props(city=STR, zip=STR, country=STR))
    return {"type": "object", "properties": {
        "id": {"type": "integer"}, "created_at": TS, "updated_at": TS, "shipped_at": TS, "status": STR,
        "total": NUM, "currency": STR, "customer": customer,
        "line_items": {"type": ["null", "array"], "items": item},
        "tags": {"type": ["null", "array"], "items": {"type": "string"}},
        "notes": STR, "attributes": {"type": ["null", "object"]}}}


def _schemas() -> dict[str, Record]:
    """JSON Schemas of the three sample streams, by name."""
    customers = {"type": "object", "properties": {"id": {"type": "integer"}, "email": STR, "name": STR,
                                                  "tier": STR, "updated_at": TS, "deleted": BOOL}}
    events = {"type": "object", "properties": {"event_id": {"type": "string"}, "type": STR, "occurred_at": TS,
                                               "user_id": INT, "payload": {"type": ["null", "object"]}}}
    base = {"$schema": "http://json-schema.org/draft-07/schema#"}
    return {name: {**base, **s} for name, s in
            (("orders", _orders_schema()), ("customers", customers), ("events", events))}


def _configured_stream(name: str, schema: Record, pk: str, mode: str) -> Record:
    """One ConfiguredAirbyteStream, incremental on the stream's cursor."""
    cursor = [CURSORS[name]]
    return {"stream": {"name": name, "json_schema": schema, "supported_sync_modes": ["full_refresh", "incremental"],
                       "source_defined_cursor": True, "default_cursor_field": cursor,
                       "source_defined_primary_key": [[pk]]},
            "sync_mode": "incremental", "cursor_field": cursor,
            "destination_sync_mode": mode, "primary_key": [[pk]]}


def sample_catalog() -> Record:
    """The ConfiguredAirbyteCatalog describing the sample streams."""
    schemas = copy.deepcopy(_schemas())
    return {"streams": [_configured_stream("orders", schemas["orders"], "id", "append_dedup"),
                        _configured_stream("customers", schemas["customers"], "id", "append_dedup"),
                        _configured_stream("events", schemas["events"], "event_id", "append")]}


def write_catalog(path: Path | str) -> Path:
    """Write sample_catalog() as JSON to `path` and return it."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(sample_catalog(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return out
