"""Listing a landing: the one place that touches the file system for discovery (SPEC §2.4).

Local folders today; an object store later lists through Hadoop's FileSystem behind the same
functions (`list_files`, `read_head`, `read_text`), so discovery code above them does not change.
"""
from __future__ import annotations

import gzip
import os
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath


@dataclass(frozen=True)
class FileEntry:
    """One producer file: path relative to the landing (POSIX), size and modification time."""

    path: str
    size: int
    modified_ms: int

    @property
    def name(self) -> str:
        return PurePosixPath(self.path).name

    @property
    def parts(self) -> tuple[str, ...]:
        return PurePosixPath(self.path).parts


def list_files(root: Path, suffixes: tuple[str, ...]) -> list[FileEntry]:
    """Files under `root` (recursively) whose names end in one of `suffixes`, sorted by path.
    Hidden files and folders (`.` or `_` first, e.g. temporary upload files) are skipped."""
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
        for name in files:
            if name.startswith((".", "_")) or not name.endswith(suffixes):
                continue
            path = Path(folder, name)
            stat = path.stat()
            found.append(FileEntry(path.relative_to(root).as_posix(), stat.st_size, int(stat.st_mtime * 1000)))
    return sorted(found, key=lambda f: f.path)


def read_head(root: Path, relative: str, limit: int = 1 << 20) -> str | None:
    """The first line of a file (gzip read as its content), None if it cannot be read: small metadata."""
    path = root / relative
    try:
        opener = gzip.open if relative.endswith(".gz") else open
        with opener(path, "rb") as handle:
            head = handle.readline(limit)
    except (OSError, EOFError, zlib.error):
        return None
    return head.decode("utf-8-sig", errors="replace").strip()


def read_text(root: Path, relative: str) -> str:
    """A small metadata file (a schema, a package state) as text."""
    return (root / relative).read_text(encoding="utf-8-sig")
