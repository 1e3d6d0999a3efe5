"""Listing a landing of manifest packages from a cursor: what is new since the last listing, late arrivals at the
next full listing, no package missed or found twice; locally and in a bucket."""
from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from normalization_core.inputs import package_listing
from normalization_core.inputs.package_listing import (
    FULL_LISTING_SECONDS,
    ListingCursor,
    list_packages,
    package_names,
    read_cursor,
    write_cursor,
)
from normalization_core.io.storage import ObjectStore, StorePath


def land(landing, load_id: str, manifest: bool = True) -> None:
    """A one-file package named `load_id` (without its manifest: in flight)."""
    folder = landing / load_id
    if not isinstance(folder, StorePath):
        folder.mkdir(parents=True)
    (folder / "orders.jsonl").write_text('{"id": 1}\n')
    if manifest:
        complete(landing, load_id)


def complete(landing, load_id: str) -> None:
    (landing / load_id / "_manifest.json").write_text(json.dumps({
        "load_id": load_id, "created_at": "2024-06-01T00:00:00Z", "source": "shop", "format": "records",
        "streams": {"orders": {"files": ["orders.jsonl"], "records": 1}}}))


class Sensor:
    """Lists like a sensor tick: what it finds becomes done, and the cursor goes to the next tick; `by_name`: a full
    listing looks up by name what it found done before, as the landing sensor and a pass do."""

    def __init__(self, landing, by_name: bool = True) -> None:
        self.landing, self.cursor, self.done, self.found, self.by_name = landing, None, set(), [], by_name

    def tick(self, now: float) -> list[str]:
        listing = list_packages(self.landing, "shop", self.cursor, self.registered, now,
                                done_before=(lambda ids: set(ids) & self.done) if self.by_name else None)
        new = [p.load_id for p in listing.discovery.packages]
        self.found += new
        self.done |= set(new)
        self.cursor = listing.cursor
        return new

    def registered(self, packages) -> set[str]:
        return {p.load_id for p in packages if p.load_id in self.done}


def test_a_tick_lists_what_is_new_and_a_full_listing_finds_late_arrivals(tmp_path):
    sensor = Sensor(tmp_path)
    land(tmp_path, "0002")
    land(tmp_path, "0004", manifest=False)  # in flight
    (tmp_path / "stray").mkdir()  # sorts after every load ID: it must not move the cursor
    assert sensor.tick(now=1000.0) == ["0002"]
    # found now, done once the tick is applied: looked at once more, with what is in flight
    assert sensor.cursor == ListingCursor("0002", ("0002", "0004", "stray"), 1000.0)

    land(tmp_path, "0005")
    complete(tmp_path, "0004")
    land(tmp_path, "0001")  # late: its name sorts before the cursor
    assert sensor.tick(now=1010.0) == ["0004", "0005"]
    assert sensor.tick(now=1020.0) == []
    assert sensor.tick(now=1000.0 + FULL_LISTING_SECONDS) == ["0001"]  # the next full listing
    assert sensor.cursor.full_at == 1000.0 + FULL_LISTING_SECONDS
    assert sensor.found == ["0002", "0004", "0005", "0001"]


def test_a_full_listing_reads_the_manifests_of_late_arrivals_and_open_packages_alone(tmp_path, monkeypatch):
    sensor = Sensor(tmp_path)
    for name in ("0001", "0002", "0003"):
        land(tmp_path, name)
    land(tmp_path, "0005", manifest=False)  # in flight
    (tmp_path / "0004").mkdir()
    (tmp_path / "0004" / "_manifest.json").write_text("{not json")  # rejected
    assert sensor.tick(now=0.0) == ["0001", "0002", "0003"]
    assert sensor.tick(now=1.0) == []  # looked at once more, done: no longer open
    land(tmp_path, "0000")  # late: its name sorts before the cursor
    read, reading = [], package_listing.read_package
    monkeypatch.setattr(package_listing, "read_package", lambda folder, source: read.append(folder.name) or reading(
        folder, source))

    assert sensor.tick(now=FULL_LISTING_SECONDS) == ["0000"]
    assert sorted(read) == ["0000", "0004"]  # not 0001-0003, done; 0005 has no manifest yet
    read.clear()
    complete(tmp_path, "0005")
    assert Sensor(tmp_path, by_name=False).tick(now=0.0) == ["0000", "0001", "0002", "0003", "0005"]
    assert sorted(read) == ["0000", "0001", "0002", "0003", "0004", "0005"]  # no cursor: every manifest


def test_a_package_not_done_yet_is_listed_again_until_it_is(tmp_path):
    land(tmp_path, "0001")
    first = list_packages(tmp_path, "shop", None, lambda packages: set(), 0.0)
    again = list_packages(tmp_path, "shop", first.cursor, lambda packages: set(), 1.0)
    assert [p.load_id for p in again.discovery.packages] == ["0001"] and not again.full
    done = list_packages(tmp_path, "shop", again.cursor, lambda packages: {p.load_id for p in packages}, 2.0)
    assert done.discovery.packages == () and done.cursor.open == ()


def test_a_rejected_package_is_reported_on_every_listing(tmp_path):
    (tmp_path / "0001").mkdir()
    (tmp_path / "0001" / "_manifest.json").write_text("{not json")
    cursor = None
    for now in (0.0, 1.0):
        listing = list_packages(tmp_path, "shop", cursor, lambda packages: set(), now)
        assert [r.load_id for r in listing.discovery.rejected] == ["0001"]
        cursor = listing.cursor


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["land", "late", "in flight", "complete", "tick", "full"]),
                          st.integers(0, 30)), max_size=25), st.booleans())
def test_ticks_never_miss_nor_repeat_a_package(tmp_path_factory, steps, by_name):
    landing = tmp_path_factory.mktemp("landing")
    sensor, landed, in_flight, now, top = Sensor(landing, by_name), set(), [], 0.0, 100
    for action, number in steps:
        now += 1.0
        if action in ("land", "in flight", "late"):
            name = f"{number:04d}" if action == "late" else f"{top:04d}"
            top += action != "late"
            if not (landing / name).exists():
                land(landing, name, manifest=action != "in flight")
                (in_flight.append if action == "in flight" else landed.add)(name)
        elif action == "complete" and in_flight:
            complete(landing, in_flight[0])
            landed.add(in_flight.pop(0))
        elif action in ("tick", "full"):
            sensor.tick(now + (FULL_LISTING_SECONDS if action == "full" else 0.0))
            now += FULL_LISTING_SECONDS if action == "full" else 0.0
        assert len(sensor.found) == len(set(sensor.found))  # never twice
        assert set(sensor.found) <= landed  # never in flight
    sensor.tick(now + FULL_LISTING_SECONDS)
    assert set(sensor.found) == landed and len(sensor.found) == len(landed)


def test_cursor_text_round_trip_and_any_other_text_means_a_full_listing(tmp_path):
    cursor = ListingCursor("0002", ("0004",), 12.5)
    assert ListingCursor.from_json(cursor.to_json()) == cursor
    for text in (None, "", "1717200000.000000", "{}", '{"after": 3, "open": [], "full_at": 0}', "[1]"):
        assert ListingCursor.from_json(text) is None
    assert not ListingCursor("0002", (), 12.5).tells_more_than(cursor)  # "0004" done since: nothing to keep
    assert ListingCursor("0002", ("0005",), 12.5).tells_more_than(cursor)
    assert ListingCursor("0003", (), 12.5).tells_more_than(cursor) and cursor.tells_more_than(None)
    write_cursor(tmp_path / "wh" / "_norm_listing.json", cursor)
    assert read_cursor(tmp_path / "wh" / "_norm_listing.json") == cursor
    assert read_cursor(tmp_path / "missing.json") is None


def test_a_bucket_is_listed_from_the_cursor_on(s3_bucket):
    landing = StorePath(s3_bucket.uri("landing"), ObjectStore(endpoint=s3_bucket.endpoint, region="us-east-1"))
    for name in ("0001", "0002", "0002.5", "0003"):
        land(landing, name)
    assert package_names(landing) == ["0001", "0002", "0002.5", "0003"]
    assert package_names(landing, "0002") == ["0002.5", "0003"]
    sensor = Sensor(landing)
    assert sensor.tick(now=0.0) == ["0001", "0002", "0002.5", "0003"]
    land(landing, "0004")
    land(landing, "0000")
    assert sensor.tick(now=1.0) == ["0004"]
    assert sensor.tick(now=FULL_LISTING_SECONDS) == ["0000"]
    write_cursor(landing / "_norm_listing.json", sensor.cursor)
    assert read_cursor(landing / "_norm_listing.json") == sensor.cursor
