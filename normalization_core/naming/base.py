"""The naming-convention interface and the hash-tag shortening it shares (SPEC §4)."""
from __future__ import annotations

import base64
import hashlib
import re
import unicodedata
from abc import ABC, abstractmethod
from collections.abc import Iterator
from itertools import count
from typing import ClassVar

EMPTY_IDENTIFIER = "_empty"
"""Name of a blank key or stream (dlt's `EMPTY_KEY_IDENTIFIER`)."""
TAG_LENGTH = 6
"""Characters in a hash tag: base64 of a 4-byte shake_128 digest, unpadded."""
_TAG_DIGEST_BYTES = 4
"""dlt derives 4 bytes from a 0.001 collision probability: int(3 * log2(1000) // 8) + 1."""
_TAG_TRANSLATION = bytes.maketrans(b"/+", b"ab")
TABLE_NAME_CHARACTERS = re.compile(r"[A-Za-z0-9_]+")
"""Every table name (a folder of the warehouse, a name in the catalog) is made of these only: Spark's session
catalog refuses any other character in a table name, even quoted, and a shell needs none of them quoted."""


def is_safe_table_name(name: str) -> bool:
    """`name` needs no quoting as a folder, in a shell or in a catalog (`TABLE_NAME_CHARACTERS`)."""
    return TABLE_NAME_CHARACTERS.fullmatch(name) is not None


def strip_accents(text: str) -> str:
    """Decompose (NFD) and drop combining marks: `àêî öÙ` -> `aei oU`."""
    return "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")


def compute_tag(text: str) -> str:
    """dlt's tag: shake_128 of `text`, base64 without `=`, `/`->`a`, `+`->`b`, lower-cased."""
    digest = hashlib.shake_128(text.encode("utf-8")).digest(_TAG_DIGEST_BYTES)
    encoded = base64.b64encode(digest).rstrip(b"=").translate(_TAG_TRANSLATION)
    return encoded.lower().decode("ascii")


def trim_and_tag(name: str, tag: str, max_length: int) -> str:
    """Keep the first ceil(r/2) and the last floor(r/2) characters of `name` around `tag`, r = max_length - len(tag)."""
    if len(tag) > max_length:
        raise ValueError(f"tag {tag!r} does not fit in {max_length} characters")
    remaining = max_length - len(tag)
    head, tail = remaining - remaining // 2, remaining // 2
    return name[:head] + tag + name[len(name) - tail:]


def shorten_with_tag(name: str, tag_source: str, max_length: int | None) -> str:
    """Return `name` if it fits, else cut it to `max_length` with the tag of `tag_source` in the middle."""
    if not max_length or len(name) <= max_length:
        return name
    return trim_and_tag(name, compute_tag(tag_source), max_length)


class NamingConvention(ABC):
    """Maps JSON keys and stream names to legal, stable identifiers.

    Subclasses must be deterministic, idempotent (a normalized name normalizes to itself) and pure.
    Names are compared case-insensitively, as Delta does.
    """

    name: ClassVar[str] = "custom"
    """Short name of the convention (`native`, `dlt`, `airbyte`)."""
    path_separator: ClassVar[str] = "__"
    """Joins the parts of a flattened column or nested table name."""
    default_max_identifier_length: ClassVar[int] = 255
    min_identifier_length: ClassVar[int] = 8
    """Below this the hash tags and suffixes that keep names unique no longer fit."""

    def __init__(self, max_identifier_length: int | None = None) -> None:
        length = self.default_max_identifier_length if max_identifier_length is None else max_identifier_length
        if not isinstance(length, int) or length < self.min_identifier_length:
            raise ValueError(f"naming convention {self.name!r}: max_identifier_length must be an integer "
                             f">= {self.min_identifier_length}, got {max_identifier_length!r}")
        self.max_identifier_length = length

    def __repr__(self) -> str:
        return f"{type(self).__name__}(max_identifier_length={self.max_identifier_length})"

    @abstractmethod
    def normalize_identifier(self, identifier: str) -> str:
        """One JSON key or stream name -> a legal identifier, shortened to the maximum length."""

    def normalize_table_name(self, name: str) -> str:
        """Stream name -> root table name."""
        return self.normalize_identifier(name)

    def normalize_path(self, path: str) -> str:
        """A key that may contain the path separator -> a legal name (conventions without paths: an identifier)."""
        return self.normalize_identifier(path)

    def make_path(self, *parts: str) -> str:
        """Join already-normalized parts with the path separator; blank parts are skipped."""
        return self.path_separator.join(part for part in parts if part.strip())

    def shorten(self, name: str) -> str:
        """Cut `name` to the maximum length, deterministically, with a hash tag of `name` in the middle."""
        return shorten_with_tag(name, name, self.max_identifier_length)

    def child_table_name(self, parent_table: str, key_path: tuple[str, ...]) -> str:
        """Name of the nested table for the array at `key_path` (raw keys) under `parent_table`."""
        parts = [self.normalize_path(part) for part in (parent_table, *key_path)]
        return self.shorten(self.make_path(*parts))

    def collision_candidates(self, original: str, name: str, written: str) -> Iterator[str]:
        """Names to try, in order, when `name` (normalized from `original`) is taken: `name_<tag>`.

        `original` identifies the key (or table) among the others; `written` is its name as written: the
        key, a flattened path's keys joined by the path separator, a table's stream name or joined path.
        The tag comes from `original` (then `original#1`, `original#2`, ...), so a given key always gets
        the same name whatever else is in the batch. A suffix convention suffixes `written` instead
        (`AirbyteNaming`): `original` may be an opaque key such as the JSON text of a path.
        """
        keep = self.max_identifier_length - TAG_LENGTH - 1
        stem = name[:keep].rstrip("_")  # a cut ending in `_` must not form a `__` path separator
        for attempt in count():
            seed = original if attempt == 0 else f"{original}#{attempt}"
            yield f"{stem}_{compute_tag(seed)}"
