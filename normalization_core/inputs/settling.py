"""Producer files that may still be written (SPEC §2.4): left out of a listing until they have settled, and said.

A producer that writes its files in place (a Singer tap's output, Airbyte's S3 / local-JSON destination, a copy
into a bucket) keeps touching a file while it writes it, so a file modified less than `settle_seconds` ago is not
read yet. What is left out is reported (`Settling`: how many files, how many units, when the last of them
becomes readable), so that `lakenorm normalize` and the landing sensor say what waits and
`lakenorm normalize --wait` can wait for it instead of a script polling.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import Protocol

from normalization_core.configuration.config import SourceConfig
from normalization_core.inputs.listing import FileEntry
from normalization_core.inputs.members import Grouping
from normalization_core.io.load_packages import Settling

UNITS_BY_PATH = frozenset({"singer", "dlt_extract"})
"""Kinds whose unit is named by a file's path alone (a Singer run: its top-level file or folder; a dlt package: its
folder): their settling files are counted without being read (a half-written gzip file cannot be). The other
kinds group settling files as they group settled ones (`members`, which reads at most a file's first line:
an Airbyte sync is its first record's `sync_id`)."""


class GroupsFiles(Protocol):
    """What counting settling units needs of a file input kind (`base.FileInput`, which lists with this module)."""

    @property
    def name(self) -> str: ...

    def members(self, source: SourceConfig, files: list[FileEntry]) -> Grouping: ...


def split_settled(files: Sequence[FileEntry], settle_seconds: int,
                  now_ms: int) -> tuple[list[FileEntry], list[FileEntry]]:
    """(settled, settling): files not modified for `settle_seconds`, and the others (a file modified in the
    future, by another host's clock, settles once that time is `settle_seconds` past)."""
    settled: list[FileEntry] = []
    settling: list[FileEntry] = []
    for entry in files:
        (settled if now_ms - entry.modified_ms >= settle_seconds * 1000 else settling).append(entry)
    return settled, settling


def path_unit(entry: FileEntry) -> str:
    """The unit a file belongs to by its path: its top-level folder, or the file itself without its suffixes."""
    top = entry.parts[0]
    return top if len(entry.parts) > 1 else top.split(".")[0]


def settling_of(kind: GroupsFiles, source: SourceConfig, files: Sequence[FileEntry]) -> Settling | None:
    """What `files` (settling, not yet normalized) make: their count, their units, when the last is readable."""
    if not files:
        return None
    readable_ms = max(f.modified_ms for f in files) + source.settle_seconds * 1000
    return Settling(files=len(files), units=_units(kind, source, files),
                    readable_at=datetime.fromtimestamp(readable_ms / 1000, tz=timezone.utc))


def _units(kind: GroupsFiles, source: SourceConfig, files: Sequence[FileEntry]) -> int:
    if kind.name in UNITS_BY_PATH:
        return len({path_unit(f) for f in files})
    grouping = kind.members(source, list(files))
    units = {m.base_load_id for m in grouping.members} | {r.load_id for r in grouping.rejected}
    grouped = {m.file.path for m in grouping.members} | {str(r.folder) for r in grouping.rejected}
    # A file its kind does not group yet (nothing written in it so far) counts as a unit of its own path.
    return len(units | {f"path:{path_unit(f)}" for f in files if f.path not in grouped})


def settling_text(settling: Settling, now: datetime | None = None) -> str:
    """`3 files (1 package) still settling, readable from 06:41:12 UTC (in 42 s)`."""
    now = now or datetime.now(timezone.utc)
    at = settling.readable_at
    if at.microsecond:  # a whole second, not before the files are readable
        at = at.replace(microsecond=0) + timedelta(seconds=1)
    when = at.strftime("%H:%M:%S UTC" if at.date() == now.date() else "%Y-%m-%d %H:%M:%S UTC")
    return (f"{_count(settling.files, 'file')} ({_count(settling.units, 'package')}) still settling, "
            f"readable from {when} ({_until(settling.readable_at - now)})")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _until(left: timedelta) -> str:
    seconds = math.ceil(left.total_seconds())
    if seconds <= 0:
        return "now"
    if seconds < 120:
        return f"in {seconds} s"
    if seconds < 7200:
        return f"in {math.ceil(seconds / 60)} min"
    return f"in {math.ceil(seconds / 3600)} h"
