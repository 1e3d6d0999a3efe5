"""The input-kind interface (SPEC §2.4): what a landing holds, as naming conventions are plug-ins.

A kind finds complete units of work (load packages), names their load IDs, turns their files into
classified lines (the columns of `transform.raw.record_lines`) and may bring stream schemas.
"""
from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timezone

from pyspark.sql import DataFrame, SparkSession

from normalization_core.configuration.config import LakenormConfig, SourceConfig
from normalization_core.schema.stream_settings import StreamSettings
from normalization_core.inputs.ledger import LedgerEntry, compare, ledger_table, read_ledger
from normalization_core.inputs.listing import FileEntry, list_files
from normalization_core.inputs.members import Grouping, Member
from normalization_core.inputs.package_listing import Done, DoneBefore, Listing, ListingCursor
from normalization_core.inputs.settling import settling_of, split_settled
from normalization_core.io.load_packages import LOAD_ID_PATTERN, Discovery, LoadPackage, RejectedPackage


class InputKind:
    """One kind of landing content. Subclasses implement discovery and classification."""

    name = ""
    uses_ledger = False
    """Producer files carry no manifest: a file ledger says what was normalized."""

    def discover(self, config: LakenormConfig, source: SourceConfig) -> Discovery:
        """Complete units not yet normalized (and rejected ones), in arrival order."""
        raise NotImplementedError

    def find(self, config: LakenormConfig, source: SourceConfig, load_id: str) -> LoadPackage | None:
        """The unit named `load_id` (normalized before or pending), None when there is none."""
        raise NotImplementedError

    def discover_since(self, config: LakenormConfig, source: SourceConfig, cursor: ListingCursor | None,
                       done: Done, now: float, done_before: DoneBefore | None = None) -> Listing:
        """`discover` without the units `done` names, and the next listing's cursor: a kind that lists
        incrementally lists what is new since `cursor` (and, now and then, with `done_before`, what it has not
        seen done: `package_listing.list_packages`); this one lists everything and keeps no cursor."""
        found = self.discover(config, source)
        finished = done(found.packages) if found.packages else set()
        pending = tuple(p for p in found.packages if p.load_id not in finished)
        return Listing(replace(found, packages=pending), None)

    def classify(self, spark: SparkSession, package: LoadPackage) -> DataFrame:
        """The unit's lines, classified (`transform.raw` columns, without the load ID)."""
        raise NotImplementedError

    def landed_streams(self, config: LakenormConfig, source: SourceConfig) -> set[str]:
        return {s for p in self.discover(config, source).packages for s in p.streams}

    def catalog(self, source: SourceConfig) -> dict[str, StreamSettings]:
        """Stream settings that come with the input (used when the source has no catalog)."""
        return {}


def ledger_path(config: LakenormConfig, source: SourceConfig) -> str:
    return config.table_path(source.name, ledger_table(source.naming.names.loads_table))


def valid_load_id(text: str) -> str:
    """`text` as a load ID: characters outside [A-Za-z0-9._-] become `_`, too long gets a hash tail."""
    cleaned = "".join(c if c.isalnum() and c.isascii() or c in "._-" else "_" for c in text).lstrip("._-") or "load"
    if len(cleaned) > 128:
        cleaned = cleaned[:111] + "-" + hashlib.sha256(text.encode()).hexdigest()[:16]
    assert LOAD_ID_PATTERN.match(cleaned), cleaned
    return cleaned


def from_ms(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc)


class FileInput(InputKind):
    """A kind whose units are groups of producer files: settled files, ledger, late files."""

    uses_ledger = True
    suffixes: tuple[str, ...] = (".jsonl", ".jsonl.gz")

    def members(self, source: SourceConfig, files: list[FileEntry]) -> Grouping:
        raise NotImplementedError

    def settles(self, source: SourceConfig) -> bool:
        """Whether a file is read only once `settle_seconds` old: its producer writes it in place, so a recent
        modification may mean it is still being written (a kind whose producer signals completion says no)."""
        return True

    def package(self, source: SourceConfig, load_id: str, members: Sequence[Member]) -> LoadPackage:
        raise NotImplementedError

    def discover(self, config: LakenormConfig, source: SourceConfig) -> Discovery:
        ledger = _ledger(config, source)
        settled, settling = list_files(source.landing, self.suffixes), []
        if self.settles(source):
            settled, settling = split_settled(settled, source.settle_seconds, int(time.time() * 1000))
        new, changed = [], []
        for entry in settled:
            done = ledger.get(entry.path)
            if done is None:
                new.append(entry)
            elif not done.lists(entry) and (change := compare(source.landing, done, entry)) is not None:
                changed.append(change)  # touched (same bytes: recorded, silent) or replaced (reported once)
        grouping = self.members(source, new)
        used = {e.load_id for e in ledger.values()}
        packages = [self.package(source, load_id, group) for load_id, group in _units(grouping.members, used)]
        packages.sort(key=lambda p: p.arrival_key)
        waiting = settling_of(self, source, [f for f in settling if f.path not in ledger])
        return Discovery(tuple(packages), tuple(grouping.rejected), waiting, tuple(changed))

    def find(self, config: LakenormConfig, source: SourceConfig, load_id: str) -> LoadPackage | None:
        done = [e.file.path for e in _ledger(config, source).values() if e.load_id == load_id]
        if done:  # normalized before: its files as they are now (a replaced file is read anew, and recorded so)
            current = {f.path: f for f in list_files(source.landing, self.suffixes)}
            members = self.members(source, [current[p] for p in done if p in current]).members
            return self.package(source, load_id, members) if members else None
        return next((p for p in self.discover(config, source).packages if p.load_id == load_id), None)

    def landed_streams(self, config: LakenormConfig, source: SourceConfig) -> set[str]:
        files = list_files(source.landing, self.suffixes)
        return {m.stream for m in self.members(source, files).members if m.stream}


def _ledger(config: LakenormConfig, source: SourceConfig) -> dict[str, LedgerEntry]:
    path = ledger_path(config, source)
    return read_ledger(path, config.storage_options(path))


def _units(members: list[Member], used: set[str]) -> list[tuple[str, list[Member]]]:
    """Members grouped by base load ID; a unit whose ID is already in the ledger gets its own late ID."""
    groups: dict[str, list[Member]] = {}
    for member in members:
        groups.setdefault(member.base_load_id, []).append(member)
    units = []
    for base, group in groups.items():
        load_id = base
        if base in used:
            digest = hashlib.sha256("\n".join(sorted(m.file.path for m in group)).encode()).hexdigest()[:10]
            load_id = valid_load_id(f"{base[:100]}.late-{digest}")
        units.append((load_id, group))
    return units
