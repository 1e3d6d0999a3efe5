"""Listing a landing: the one place that touches the file system for discovery (SPEC §2.4).

A local folder, or an `s3a://` landing (`io.storage.StorePath`, listed with Arrow's S3 client) behind the
same functions (`list_files`, `read_head`, `matching_lines`, `read_text`), so discovery code above them
does not change.
"""
from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

import pyarrow as pa
import pyarrow.compute as pc
from pyarrow import csv

from normalization_core.io.storage import Landing, StorePath


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


def list_files(root: Landing, suffixes: tuple[str, ...]) -> list[FileEntry]:
    """Files under `root` (recursively) whose names end in one of `suffixes`, sorted by path.
    Hidden files and folders (`.` or `_` first, e.g. temporary upload files) are skipped."""
    found = [FileEntry(path, size, modified) for path, size, modified in _walk(root)
             if not any(part.startswith((".", "_")) for part in PurePosixPath(path).parts)
             and path.endswith(suffixes)]
    return sorted(found, key=lambda f: f.path)


def _walk(root: Landing) -> Iterator[tuple[str, int, int]]:
    """(relative POSIX path, size, modified ms) of every file under `root`."""
    if isinstance(root, StorePath):
        yield from root.walk_files()
        return
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]
        for name in files:
            path = Path(folder, name)
            stat = path.stat()
            yield path.relative_to(root).as_posix(), stat.st_size, int(stat.st_mtime * 1000)


@contextmanager
def open_file(root: Landing, relative: str) -> Iterator[IO[bytes]]:
    """A landed file's bytes (a `.gz` file's content), local or in an object store."""
    path = root / relative
    with path.open_binary() if isinstance(path, StorePath) else open(path, "rb") as raw:
        yield gzip.GzipFile(fileobj=raw) if relative.endswith(".gz") else raw


def read_head(root: Landing, relative: str, limit: int = 1 << 20) -> str | None:
    """The first line of a file (gzip read as its content), None if it cannot be read: small metadata."""
    try:
        with open_file(root, relative) as handle:
            head = _first_line(handle, limit)
    except (OSError, EOFError, zlib.error):
        return None
    return head.decode("utf-8-sig", errors="replace").strip()


def matching_lines(root: Landing, relative: str, pattern: str) -> list[tuple[int, bytes]]:
    """(line number, line) of the lines of a file that match the regular expression `pattern`. Arrow's C++
    reader streams the file in blocks and runs the regex: no Python per line, memory bounded by the block
    (made larger, and the file read again, when one line does not fit in it)."""
    block = 1 << 22
    while True:
        try:
            return _matching_lines(root, relative, pattern, block)
        except pa.ArrowInvalid as err:
            if "straddl" not in str(err):
                raise
            block *= 4


def _matching_lines(root: Landing, relative: str, pattern: str, block: int) -> list[tuple[int, bytes]]:
    # Each line is one binary value: JSON text holds no raw \x01 (a line that does is skipped).
    parse = csv.ParseOptions(delimiter="\x01", quote_char=False, double_quote=False, escape_char=False,
                             ignore_empty_lines=False, invalid_row_handler=lambda row: "skip")
    options = {"read_options": csv.ReadOptions(column_names=["line"], block_size=block), "parse_options": parse,
               "convert_options": csv.ConvertOptions(column_types={"line": pa.binary()})}
    found, first = [], 0
    with open_file(root, relative) as handle:
        for batch in csv.open_csv(handle, **options):
            lines = batch.column(0)
            found += [(first + i, lines[i].as_py())
                      for i in pc.indices_nonzero(pc.match_substring_regex(lines, pattern)).to_pylist()]
            first += len(lines)
    return found


def _first_line(handle: IO[bytes], limit: int, chunk: int = 1 << 16) -> bytes:
    """Bytes up to the first newline (at most `limit`), read in chunks: object-store streams have no readline."""
    head = b""
    while len(head) < limit and b"\n" not in head:
        more = handle.read(min(chunk, limit - len(head)))
        if not more:
            break
        head += more
    return head.split(b"\n", 1)[0][:limit]


def read_text(root: Landing, relative: str) -> str:
    """A small metadata file (a schema, a package state) as text."""
    return (root / relative).read_text(encoding="utf-8-sig")
