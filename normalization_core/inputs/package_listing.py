"""A landing of manifest packages listed incrementally (SPEC §2.1): what is new since the last listing.

Package folders are named by load IDs, which producers make ordered (a timestamp first). A listing leaves a cursor
(`ListingCursor`): the greatest name of a complete package it saw and the names to look at again (in flight,
rejected, or complete but not done yet). The next listing lists only the names after it (a local folder's names cost
microseconds each; a bucket is listed by S3 from `start-after`) plus the remembered ones, and reads the manifests of
those alone. A package whose name sorts before the cursor and that lands after the listing (a late arrival) is found
by the next full listing, at most `FULL_LISTING_SECONDS` later, as Auto Loader's periodic backfill listings find
what incremental listing missed. A full listing lists every package folder, and reads the manifests of those not
found done before (by name, `unseen`); the first listing (no cursor yet) reads every one.
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from normalization_core.errors import PackageError
from normalization_core.io.load_packages import MANIFEST, Discovery, LoadPackage, RejectedPackage, read_package
from normalization_core.io.storage import Landing, StorePath

FULL_LISTING_SECONDS = 3600.0
"""A listing lists the whole landing again when its cursor's last full listing is this old (late arrivals)."""

Done = Callable[[Sequence[LoadPackage]], set[str]]
"""Of some complete packages, the load IDs already taken care of (normalized; registered as partitions)."""
DoneBefore = Callable[[Sequence[str]], set[str]]
"""Of some load IDs that an earlier listing found complete and taken care of, those still taken care of (looked up by
name: their manifests are not read again)."""


@dataclass(frozen=True)
class ListingCursor:
    """Where a landing's last listing ended (kept as JSON text: a sensor's cursor, a file beside the tables)."""

    after: str = ""
    """The greatest name of a complete package listed so far."""
    open: tuple[str, ...] = ()
    """Names at or before `after` to look at again: in flight, rejected, or complete and not done yet."""
    full_at: float = 0.0
    """When the last full listing ran (seconds since the epoch)."""

    def to_json(self) -> str:
        return json.dumps({"after": self.after, "open": list(self.open), "full_at": self.full_at},
                          separators=(",", ":"))

    def tells_more_than(self, other: ListingCursor | None) -> bool:
        """Whether the next listing from this cursor would differ from one from `other` in more than names done
        since (which `other` keeps looking at once more): a pass with nothing new need not keep it (writes nothing)."""
        return (other is None or (self.after, self.full_at) != (other.after, other.full_at)
                or not set(self.open) <= set(other.open))

    @classmethod
    def from_json(cls, text: str | None) -> ListingCursor | None:
        """The cursor `text` holds; None (a full listing follows) when it holds none: empty, another format."""
        try:
            doc = json.loads(text) if text else None
            cursor = cls(doc["after"], tuple(doc["open"]), float(doc["full_at"]))
        except (ValueError, TypeError, KeyError):
            return None
        if not isinstance(cursor.after, str) or not all(isinstance(name, str) for name in cursor.open):
            return None
        return cursor


@dataclass(frozen=True)
class Listing:
    """What a listing found (complete packages not done, rejected ones) and the cursor of the next listing
    (None: the input kind lists everything every time)."""

    discovery: Discovery
    cursor: ListingCursor | None
    full: bool = True


def package_names(landing: Landing, after: str = "") -> list[str]:
    """Names of the landing's folders that sort after `after`, sorted."""
    if isinstance(landing, StorePath):
        return landing.folder_names(after)
    try:
        with os.scandir(landing) as entries:
            return sorted(e.name for e in entries if e.name > after and e.is_dir())
    except FileNotFoundError:
        return []


def list_packages(landing: Landing, source: str, cursor: ListingCursor | None, done: Done, now: float,
                  full_every: float = FULL_LISTING_SECONDS, done_before: DoneBefore | None = None) -> Listing:
    """The complete packages of `landing` not `done` (in arrival order) and the rejected ones, listed from `cursor`
    on (None, or a full listing `full_every` seconds old: the whole landing); and the next listing's cursor.
    `done_before`: a full listing after a cursor reads no manifest of the packages it names done (`unseen`)."""
    full = cursor is None or not 0 <= now - cursor.full_at < full_every
    names = package_names(landing) if full or cursor is None else package_names(landing, cursor.after)
    candidates = names if full or cursor is None else sorted(set(names) | set(cursor.open))
    if full and cursor is not None and done_before is not None:
        candidates = unseen(candidates, cursor, done_before)
    packages, rejected, in_flight = [], [], []
    for name, found in zip(candidates, read_folders(landing, source, candidates)):
        if found is None:
            in_flight.append(name)
        elif isinstance(found, RejectedPackage):
            rejected.append(found)
        else:
            packages.append(found)
    finished = done(packages) if packages else set()
    pending = sorted((p for p in packages if p.load_id not in finished), key=lambda p: p.arrival_key)
    # only complete packages move the cursor: a folder in flight or rejected (whatever its name) is looked at again
    after = max([*(p.load_id for p in packages), *([cursor.after] if cursor else [])], default="")
    still_open = sorted({*in_flight, *(r.load_id for r in rejected), *(p.load_id for p in pending)})
    next_cursor = ListingCursor(after, tuple(still_open), now if full or cursor is None else cursor.full_at)
    return Listing(Discovery(tuple(pending), tuple(rejected)), next_cursor, full)


def unseen(names: list[str], cursor: ListingCursor, done_before: DoneBefore) -> list[str]:
    """`names` without those an earlier listing found complete and done that are still done: a name up to the
    cursor's and not open was complete and done when listed, or is a late arrival, which `done_before` does not
    name. So a periodic full listing reads the manifests of late arrivals and open packages alone."""
    still_open = set(cursor.open)
    passed = [name for name in names if name <= cursor.after and name not in still_open]
    done = done_before(passed) if passed else set()
    return [name for name in names if name not in done]


READERS = 16
"""Manifests read side by side from an object store (each read waits on a few requests)."""


def read_folders(landing: Landing, source: str, names: list[str]) -> list[LoadPackage | RejectedPackage | None]:
    """Each named folder's package, its rejection, or None (no manifest yet: in flight), in the order of `names`."""
    if isinstance(landing, StorePath) and len(names) > 1:
        with ThreadPoolExecutor(max_workers=READERS, thread_name_prefix="lakenorm-listing") as pool:
            return list(pool.map(lambda name: _read_one(landing / name, source), names))
    return [_read_one(landing / name, source) for name in names]


def _read_one(folder: Landing, source: str) -> LoadPackage | RejectedPackage | None:
    if not (folder / MANIFEST).is_file():
        return None
    try:
        return read_package(folder, source)
    except PackageError as err:
        return RejectedPackage(folder.name, folder, str(err))


def read_cursor(location: Landing) -> ListingCursor | None:
    """The cursor kept at `location` (a local file or an object), None when there is none yet."""
    try:
        text = location.read_text(encoding="utf-8")
    except (FileNotFoundError, OSError):
        return None
    return ListingCursor.from_json(text)


def write_cursor(location: Landing, cursor: ListingCursor) -> None:
    """Keep `cursor` at `location`, replacing what was there at once (a rename locally; an object PUT is atomic).
    Two passes writing at once: the last one's stays, and what the other one's remembered is listed again by the
    next full listing at the latest."""
    text = cursor.to_json()
    if isinstance(location, StorePath):
        location.write_text(text)
        return
    location = Path(location)
    location.parent.mkdir(parents=True, exist_ok=True)
    partial = location.with_name(f".{location.name}.{os.getpid()}")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, location)
