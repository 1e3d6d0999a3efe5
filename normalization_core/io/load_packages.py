"""Load packages on disk (SPEC §2.1): discovery and manifest validation.

Driver-side work over small metadata only: folder listings and manifest files.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import PurePosixPath
from typing import Any, Literal

import jsonschema

from normalization_core.errors import PackageError
from normalization_core.io.storage import Landing

MANIFEST = "_manifest.json"
LOAD_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
PackageFormat = Literal["records", "airbyte", "airbyte_v1", "airbyte_v2", "singer", "dlt"]
"""`records`/`airbyte`: manifest packages; the others: units of a producer input (`normalization_core.inputs`)."""
DATA_SUFFIXES = (".jsonl", ".jsonl.gz")

_STREAM_ENTRY = {
    "type": "object",
    "properties": {
        "files": {"type": "array", "items": {"type": "string", "minLength": 1}},
        "records": {"type": "integer", "minimum": 0},
    },
    "additionalProperties": False,
}
MANIFEST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["load_id", "created_at", "source", "format", "streams"],
    "properties": {
        "load_id": {"type": "string", "pattern": LOAD_ID_PATTERN.pattern},
        "created_at": {"type": "string", "minLength": 1},
        "source": {"type": "string", "minLength": 1},
        "format": {"enum": ["records", "airbyte"]},
        "streams": {"type": "object", "minProperties": 1, "additionalProperties": _STREAM_ENTRY},
        "files": {"type": "array", "items": {"type": "string", "minLength": 1}},
        "state": {},
    },
    "additionalProperties": False,
}


@dataclass(frozen=True)
class LoadPackage:
    """A complete, validated load package."""

    load_id: str
    created_at: datetime
    source: str
    format: PackageFormat
    folder: Landing
    stream_files: dict[str, tuple[str, ...]]
    """Files of each stream, relative to the folder (`records` format)."""
    files: tuple[str, ...] = ()
    """Files holding the messages of all streams (`airbyte` format)."""
    expected_records: dict[str, int] = field(default_factory=dict)
    state: Any = None
    entries: tuple[Any, ...] = ()
    """Producer inputs: the units' files (`inputs.listing.FileEntry`), recorded in the file ledger."""
    hints: dict[str, Any] = field(default_factory=dict)
    """Producer inputs: what the kind read while discovering (e.g. each stream's record version)."""

    @property
    def streams(self) -> tuple[str, ...]:
        return tuple(sorted(self.stream_files))

    @property
    def arrival_key(self) -> tuple[datetime, str]:
        """Packages arrive in (`created_at`, `load_id`) order."""
        return (self.created_at, self.load_id)

    def all_files(self) -> tuple[str, ...]:
        if self.files:
            return self.files
        return tuple(f for stream in self.streams for f in self.stream_files[stream])

    def path_of(self, relative: str) -> Landing:
        return self.folder / relative


@dataclass(frozen=True)
class RejectedPackage:
    """A complete package whose manifest is invalid: only this package is skipped."""

    load_id: str
    folder: Landing
    reason: str


@dataclass(frozen=True)
class Settling:
    """Producer files left out of a listing because they may still be written (SPEC §2.4: not read before
    they are `settle_seconds` old), and when the last of them becomes readable."""

    files: int
    units: int
    """Units of work (packages: a sync, a run, a dlt package) those files belong to."""
    readable_at: datetime
    """The newest file's modification time plus `settle_seconds` (UTC): all are readable from then on,
    unless a producer writes them again."""


@dataclass(frozen=True)
class Discovery:
    packages: tuple[LoadPackage, ...]
    """Valid complete packages in arrival order."""
    rejected: tuple[RejectedPackage, ...]
    settling: Settling | None = None
    """Producer files still settling (None when none are)."""
    changed: tuple[Any, ...] = ()
    """Producer inputs: normalized files listed with another size or time (`inputs.ledger.ChangedFile`), touched
    (the same bytes) or replaced (other bytes, to report once); `inputs.landing.record_changed_files` records them."""


def discover_packages(landing: Landing, source: str) -> Discovery:
    """Complete packages under `landing`; folders without a manifest are in flight and skipped."""
    packages, rejected = [], []
    for folder in sorted(p for p in landing.iterdir() if p.is_dir()):
        if not (folder / MANIFEST).is_file():
            continue
        try:
            packages.append(read_package(folder, source))
        except PackageError as err:
            rejected.append(RejectedPackage(folder.name, folder, str(err)))
    packages.sort(key=lambda p: p.arrival_key)
    return Discovery(tuple(packages), tuple(rejected))


def find_package(landing: Landing, source: str, load_id: str) -> LoadPackage | None:
    """The complete package named `load_id`, None when absent or in flight; raises if invalid."""
    if not LOAD_ID_PATTERN.match(load_id):
        raise PackageError(load_id, f"not a valid load ID (must match {LOAD_ID_PATTERN.pattern})")
    folder = landing / load_id
    if not (folder / MANIFEST).is_file():
        return None
    return read_package(folder, source)


def read_package(folder: Landing, source: str) -> LoadPackage:
    """Read and validate `<folder>/_manifest.json`; raises PackageError naming what is wrong."""
    name = folder.name
    try:
        doc = json.loads((folder / MANIFEST).read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise PackageError(name, f"manifest is not valid JSON: {exc}", MANIFEST) from None
    _validate_schema(name, doc)
    if doc["load_id"] != name:
        raise PackageError(name, f"manifest load_id {doc['load_id']!r} differs from its folder name")
    if doc["source"] != source:
        raise PackageError(name, f"manifest source {doc['source']!r} is not this landing's source {source!r}")
    fmt: PackageFormat = doc["format"]
    streams = doc["streams"]
    stream_files = {s: tuple(_safe_file(folder, name, f) for f in e.get("files", [])) for s, e in streams.items()}
    files = tuple(_safe_file(folder, name, f) for f in doc.get("files", []))
    _check_layout(name, fmt, stream_files, files)
    return LoadPackage(
        load_id=name, created_at=_parse_created_at(name, doc["created_at"]), source=source,
        format=fmt, folder=folder, stream_files=stream_files, files=files,
        expected_records={s: e["records"] for s, e in streams.items() if "records" in e},
        state=doc.get("state"),
    )


def _validate_schema(load_id: str, doc: Any) -> None:
    error = jsonschema.exceptions.best_match(jsonschema.Draft7Validator(MANIFEST_SCHEMA).iter_errors(doc))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "top level"
        raise PackageError(load_id, f"invalid manifest at {where}: {error.message}", MANIFEST)


def _check_layout(load_id: str, fmt: str, stream_files: dict, files: tuple[str, ...]) -> None:
    if fmt == "records":
        empty = [s for s, fs in stream_files.items() if not fs]
        if empty:
            raise PackageError(load_id, f"records package lists no files for stream {empty[0]!r}", MANIFEST)
        if files:
            raise PackageError(load_id, "top-level 'files' is for the airbyte format only", MANIFEST)
    elif not files:
        raise PackageError(load_id, "airbyte package needs a top-level 'files' list", MANIFEST)
    listed = [f for fs in stream_files.values() for f in fs] + list(files)
    if len(set(listed)) != len(listed):
        raise PackageError(load_id, "a file is listed twice in the manifest", MANIFEST)


def _safe_file(folder: Landing, load_id: str, relative: str) -> str:
    """A manifest file must resolve inside its package folder and exist."""
    posix = PurePosixPath(relative)
    if posix.is_absolute() or ".." in posix.parts or "\\" in relative or relative.startswith("~"):
        raise PackageError(load_id, f"unsafe file path {relative!r}: files must be relative, inside the package")
    path = (folder / posix).resolve()
    if not path.is_relative_to(folder.resolve()):
        raise PackageError(load_id, f"unsafe file path {relative!r}: it leaves the package folder")
    if not relative.endswith(DATA_SUFFIXES):
        raise PackageError(load_id, f"file {relative!r} must end in .jsonl or .jsonl.gz", relative)
    if not path.is_file():
        raise PackageError(load_id, "file listed in the manifest does not exist", relative)
    return str(posix)


def _parse_created_at(load_id: str, text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise PackageError(load_id, f"created_at {text!r} is not an ISO-8601 timestamp", MANIFEST) from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc)
