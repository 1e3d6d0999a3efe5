"""dlt's `snake_case` convention, used by `native` and `dlt` (SPEC §4.1, dlt.md §1)."""
from __future__ import annotations

import re
from functools import lru_cache
from typing import ClassVar

from normalization_core.naming.base import (
    EMPTY_IDENTIFIER,
    NamingConvention,
    compute_tag,
    shorten_with_tag,
)

# dlt's patterns use `\d`, which in Python also matches non-ASCII digits (`٣`); ASCII keeps names legal.
_RE_NON_ALPHANUMERIC = re.compile(r"[^a-zA-Z0-9_]+")
_RE_UNDERSCORES = re.compile(r"__+")
_RE_LEADING_DIGIT = re.compile(r"^[0-9]")
_RE_BREAK_BEFORE_WORD = re.compile(r"([^_])([A-Z][a-z]+)")
_RE_BREAK_LOWER_UPPER = re.compile(r"([a-z0-9])([A-Z])")
_REDUCE_ALPHABET = str.maketrans("+-*@|", "x_xal")
_CACHE_SIZE = 1 << 16


def to_snake_case(identifier: str) -> str:
    """dlt's snake_case steps 2-7 on a stripped, non-blank identifier, without shortening."""
    name = _RE_NON_ALPHANUMERIC.sub("_", identifier.translate(_REDUCE_ALPHABET))
    name = _RE_BREAK_BEFORE_WORD.sub(r"\1_\2", name)
    name = _RE_BREAK_LOWER_UPPER.sub(r"\1_\2", name).lower()
    if _RE_LEADING_DIGIT.match(name):
        name = "_" + name
    stripped = name.rstrip("_")
    name = stripped + "x" * (len(name) - len(stripped))
    return _RE_UNDERSCORES.sub("_", name)


@lru_cache(maxsize=_CACHE_SIZE)
def normalize_snake_identifier(identifier: str, max_length: int | None) -> str:
    """Normalize one identifier; blank -> `_empty`; longer than `max_length` -> tagged with the raw name."""
    stripped = identifier.strip()
    if not stripped:
        return EMPTY_IDENTIFIER
    return shorten_with_tag(to_snake_case(stripped), stripped, max_length)


def break_path(path: str, separator: str = "__") -> list[str]:
    """Split on the separator and drop blank parts: `_a___b__C` -> [`_a`, `_b`, `C`]."""
    return [part for part in path.split(separator) if part.strip()]


def shorten_path(path: str, tag_source: str, max_length: int | None) -> str:
    """`shorten_with_tag` for a normalized `__` path, kept a fixed point of `normalize_path`.

    dlt's cut can leave a separator touching the tag so that the parts regroup (`a__` + `1abc`: a part
    starting with a digit; `___000` cut to `__000`: `_000` becomes `000`). Only then the underscores
    touching the tag become `x`, which glues the tag to its neighbours; otherwise the result is dlt's.
    """
    if not max_length or len(path) <= max_length:
        return path
    tag = compute_tag(tag_source)
    remaining = max_length - len(tag)
    head, tail = path[:remaining - remaining // 2], path[len(path) - remaining // 2:]
    shortened = head + tag + tail
    if _is_normalized_path(shortened):
        return shortened
    head_kept, tail_kept = head.rstrip("_"), tail.lstrip("_")
    return head_kept.ljust(len(head), "x") + tag + tail_kept.rjust(len(tail), "x")


def _is_normalized_path(path: str) -> bool:
    parts = break_path(path)
    return "__".join(parts) == path and all(to_snake_case(part) == part for part in parts)


class SnakeCaseNaming(NamingConvention):
    """Lower-case snake_case names with `__` between nesting levels; the `native` convention."""

    name: ClassVar[str] = "native"

    def normalize_identifier(self, identifier: str) -> str:
        return normalize_snake_identifier(identifier, self.max_identifier_length)

    def normalize_path(self, path: str) -> str:
        parts = [self.normalize_identifier(part) for part in break_path(path, self.path_separator)]
        if not parts:
            return EMPTY_IDENTIFIER
        return shorten_path(self.make_path(*parts), path, self.max_identifier_length)

    def shorten(self, name: str) -> str:
        return shorten_path(name, name, self.max_identifier_length)


class DltNaming(SnakeCaseNaming):
    """dlt's `snake_case`: the same rules as `native`; only the system names differ (SPEC §3)."""

    name: ClassVar[str] = "dlt"
