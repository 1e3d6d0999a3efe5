"""The file ledger of a source (`_norm_files`, SPEC §2.4): producer files already normalized, their load and what
they held; and files replaced since by other bytes, reported once.

A row per file a load read (`status` normalized: size, modification time and checksum of the bytes it read; a file
touched since with the same bytes gets its new time) and, for a file replaced since, a row of the other bytes
(`status` replaced: reported when found, not again). Written with Spark after the load registry (a crash in
between re-normalizes the same load ID, which is idempotent); read without Spark (small metadata) so discovery and
the sensor stay light. A ledger written before checksums were kept gets the `checksum` and `status` columns on its
next write; a file of its rows is the same file while its size and modification time are, and is reported once
as possibly replaced when they change (its bytes cannot be compared with bytes nobody took a checksum of).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from normalization_core.inputs.checksums import checksum, same_bytes
from normalization_core.inputs.listing import FileEntry
from normalization_core.io.load_packages import LoadPackage
from normalization_core.io.load_writes import replace_loads, replace_loads_counted
from normalization_core.io.local_rows import local_rows
from normalization_core.io.storage import Landing, open_delta_table

LEDGER_SCHEMA = T.StructType([
    T.StructField("load_id", T.StringType()),
    T.StructField("file", T.StringType()),
    T.StructField("size", T.LongType()),
    T.StructField("modified_ms", T.LongType()),
    T.StructField("checksum", T.StringType()),
    T.StructField("status", T.StringType()),
])
NORMALIZED, REPLACED = "normalized", "replaced"
_CHECKSUMS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="lakenorm-checksum")


@dataclass(frozen=True)
class FileState:
    """A file as listed, and the checksum of its bytes then (`inputs.checksums`; None: not known)."""

    file: FileEntry
    checksum: str | None = None


@dataclass(frozen=True)
class LedgerEntry:
    """A normalized file: its load, the file with the bytes the load read, and other bytes that replaced it since."""

    load_id: str
    read: FileState
    replaced: FileState | None = None

    @property
    def file(self) -> FileEntry:
        return self.read.file

    def lists(self, entry: FileEntry) -> bool:
        """Whether the ledger knows the file listed as `entry` (as read, or as reported replaced)."""
        return entry == self.read.file or self.replaced is not None and entry == self.replaced.file


@dataclass(frozen=True)
class ChangedFile:
    """A normalized file listed with another size or modification time than the ledger has for it."""

    load_id: str
    now: FileState
    replaced: bool
    """The row it updates: the replaced bytes' (other bytes found now, or the replaced ones touched), else the
    file's as its load read it (the same bytes, touched)."""
    warning: str | None = None
    """Other bytes than its load read, found now: said once."""


def ledger_table(loads_table: str) -> str:
    """`_norm_loads` -> `_norm_files` (`_dlt_files`, `_airbyte_files`)."""
    return loads_table.rsplit("_", 1)[0] + "_files"


def read_ledger(path: str, storage_options: dict[str, str] | None = None) -> dict[str, LedgerEntry]:
    """Files already normalized by path; empty when the ledger does not exist yet."""
    ledger = open_delta_table(path, storage_options)
    if ledger is None:
        return {}
    present = {field.name for field in ledger.schema().fields}  # an earlier ledger: no checksum, no status
    table = ledger.to_pyarrow_table(columns=[c for c in LEDGER_SCHEMA.fieldNames() if c in present])
    read, replaced = {}, {}
    for row in table.to_pylist():  # metadata: a row or two per producer file
        state = FileState(FileEntry(row["file"], row["size"], row["modified_ms"]), row.get("checksum"))
        (replaced if row.get("status") == REPLACED else read)[row["file"]] = (row["load_id"], state)
    return {file: LedgerEntry(load_id, state, replaced.get(file, (None, None))[1])
            for file, (load_id, state) in read.items()}


def compare(root: Landing, done: LedgerEntry, entry: FileEntry) -> ChangedFile | None:
    """What the file listed as `entry` holds, which the ledger has as `done` with another size or time: the bytes
    its load read or the replaced ones (touched), or other bytes (a warning); None when it cannot be read now."""
    now = FileState(entry, checksum(root, entry))
    if now.checksum is None:
        return None
    for state, replaced in ((done.read, False), (done.replaced, True)):
        if state is not None and state.file.size == entry.size and same_bytes(state.checksum, now.checksum,
                                                                               root, entry):
            return ChangedFile(done.load_id, now, replaced)
    return ChangedFile(done.load_id, now, True, _replaced_warning(done, entry))


def _replaced_warning(done: LedgerEntry, entry: FileEntry) -> str:
    before = done.read.file.size
    if done.read.checksum is None and before == entry.size:
        what = ("was modified since, and whether its bytes changed is not known (the ledger row, written by an "
                "earlier lakenorm, holds no checksum)")
    else:
        what = f"was replaced by other content ({entry.size} bytes; it had {before})"
    return (f"file {entry.path!r}, normalized in load {done.load_id!r}, {what}; the new content is not read: "
            f"`lakenorm normalize --load-id {done.load_id}` re-normalizes that load from its files as they are now")


def checksums_of(packages: Sequence[LoadPackage]) -> Callable[[str], dict[str, str | None]]:
    """The checksums of the packages' files, computed from now on in the background (while Spark reads the same
    files); the function returned waits for those of one load ID."""
    started = {p.load_id: {e.path: _CHECKSUMS.submit(checksum, p.folder, e) for e in p.entries} for p in packages}
    return lambda load_id: {path: found.result() for path, found in started[load_id].items()}


def record_files(spark: SparkSession, path: str, load_id: str, files: Sequence[FileEntry],
                 checksums: dict[str, str | None]) -> None:
    """Replace the ledger rows of one load with its files (one commit; running it again changes nothing)."""
    entries = [LedgerEntry(load_id, FileState(f, checksums.get(f.path))) for f in files]
    replace_loads(local_rows(spark, _rows(entries), LEDGER_SCHEMA), path, "load_id", [load_id])


def record_changes(spark: SparkSession, path: str, changes: Sequence[ChangedFile],
                   storage_options: dict[str, str] | None = None) -> None:
    """The rows of changed files updated (a touched file's new time, a replacement's bytes), those of their loads
    rewritten in one commit: a touched file is not compared again, a replacement is not reported again."""
    loads = sorted({c.load_id for c in changes})

    def rows() -> DataFrame:  # read again on a retry: another run may have changed those loads' rows
        entries = {f: e for f, e in read_ledger(path, storage_options).items() if e.load_id in loads}
        for change in changes:
            done = entries.get(change.now.file.path)
            if done is not None and done.load_id == change.load_id:
                entries[done.file.path] = (replace(done, replaced=change.now) if change.replaced
                                           else replace(done, read=change.now))
        return local_rows(spark, _rows(entries.values()), LEDGER_SCHEMA)

    if loads:
        replace_loads_counted(spark, path, rows, "load_id", loads, storage_options=storage_options)


def _rows(entries: Iterable[LedgerEntry]) -> list[tuple]:
    rows = []
    for entry in entries:
        for state, status in ((entry.read, NORMALIZED), (entry.replaced, REPLACED)):
            if state is not None:
                rows.append((entry.load_id, state.file.path, state.file.size, state.file.modified_ms,
                             state.checksum, status))
    return rows
