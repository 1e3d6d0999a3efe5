"""What a producer file holds, as a short text the file ledger keeps (SPEC §2.4), so that a file touched with its
bytes unchanged (a copy without `-p`, a sync, a restore, a re-upload of the same object) is the same file.

- A local file: `sha256:<hex>` of its bytes as stored (a `.gz` file's compressed bytes), streamed in 1 MiB blocks
  (hashlib releases the GIL: it runs beside Spark reading the same file).
- An object in a store: `etag:<ETag>`, one HEAD request, no read. A single-part upload's ETag is the MD5 of its
  bytes; a multipart upload's is the MD5 of its parts' MD5s followed by `-<parts>`, so the same bytes uploaded in
  other parts get another ETag (and an encrypted object's, SSE-KMS or SSE-C, is no digest of its bytes at all).
  Equal ETags are equal bytes; when they differ, `same_bytes` reads the object and computes the recorded ETag from
  its bytes: as one part, or as parts of each size that cuts it into as many parts.
"""
from __future__ import annotations

import hashlib
import logging
from functools import lru_cache
from pathlib import Path

from normalization_core.inputs.listing import FileEntry
from normalization_core.io.storage import Landing, StorePath

LOG = logging.getLogger(__name__)
MIB, MB = 1 << 20, 10 ** 6
BLOCK, OBJECT_BLOCK = MIB, 16 * MIB
"""Bytes read at once: from a local file, and from an object (each read is one ranged GET)."""
MIN_PART = 5 * MIB
"""S3's smallest part (every part but the last)."""
MAX_PART_SIZES = 8
"""Part sizes tried against a multipart ETag: each costs one MD5 over the object's bytes."""


@lru_cache(maxsize=4096)
def checksum(root: Landing, entry: FileEntry) -> str | None:
    """The checksum of the file listed as `entry` (its size and modification time key the cache: a process that
    lists a landing again, such as the sensor's, reads a file once); None when it cannot be read (gone)."""
    path = root / entry.path
    try:
        if isinstance(path, StorePath):
            etag = path.etag()
            return None if etag is None else "etag:" + etag.strip('"')
        return "sha256:" + _sha256(path)
    except OSError as err:
        LOG.warning("no checksum of %s: %s", path, err)
        return None


def same_bytes(recorded: str | None, current: str | None, root: Landing, entry: FileEntry) -> bool:
    """Whether the file listed as `entry` (checksum `current`) holds the bytes `recorded` was taken of, both of its
    size; False when either checksum is unknown."""
    if recorded is None or current is None:
        return False
    if recorded == current:
        return True
    path = root / entry.path
    if recorded.startswith("etag:") and current.startswith("etag:") and isinstance(path, StorePath):
        return matches_etag(path, entry.size, recorded.removeprefix("etag:"))
    return False


def matches_etag(path: StorePath, size: int, etag: str) -> bool:
    """Whether the object's bytes (`size` of them) give `etag` as a single-part or a multipart upload: one read."""
    parts = etag.partition("-")[2]
    if parts and not parts.isdigit():
        return False
    digests = [_PartDigests(s) for s in part_sizes(size, int(parts))] if parts else [_PartDigests(None)]
    with path.open_binary() as handle:
        while block := handle.read(OBJECT_BLOCK):
            for digest in digests:
                digest.update(block)
    return any(d.etag() == etag for d in digests)


def part_sizes(size: int, parts: int) -> list[int]:
    """Part sizes that cut `size` bytes into `parts` parts (every part but the last of that size, at least
    5 MiB): the smallest one, then whole MiB and whole MB sizes (what uploaders use), at most `MAX_PART_SIZES`."""
    if parts == 1:
        return [max(size, 1)]
    low, high = max(-(-size // parts), MIN_PART), -(-size // (parts - 1)) - 1
    if low > high:
        return []
    found = {low}
    for unit in (MIB, MB):
        first = -(-low // unit)
        found.update(m * unit for m in range(first, min(first + MAX_PART_SIZES, high // unit + 1)))
    return sorted(found)[:MAX_PART_SIZES]


class _PartDigests:
    """The MD5s of consecutive parts of `part_size` bytes (None: one part), fed block by block; `etag` as S3
    computes it."""

    def __init__(self, part_size: int | None) -> None:
        self.part_size, self.done, self.current, self.filled = part_size, list[bytes](), _md5(), 0

    def update(self, block: bytes) -> None:
        view = memoryview(block)
        while view:
            room = len(view) if self.part_size is None else self.part_size - self.filled
            self.current.update(view[:room])
            self.filled, view = self.filled + min(room, len(view)), view[room:]
            if self.filled == self.part_size:
                self.done.append(self.current.digest())
                self.current, self.filled = _md5(), 0

    def etag(self) -> str:
        if self.part_size is None:
            return self.current.hexdigest()
        digests = self.done + ([self.current.digest()] if self.filled else [])
        return f"{_md5(b''.join(digests)).hexdigest()}-{len(digests)}"


def _md5(data: bytes = b"") -> hashlib._Hash:
    return hashlib.md5(data, usedforsecurity=False)  # a content tag (S3's ETag), no security


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(BLOCK):
            digest.update(block)
    return digest.hexdigest()
