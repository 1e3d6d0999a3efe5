"""Airbyte Basic Normalization names for a Postgres-like, lower-casing destination (SPEC §4.3, airbyte.md §1-§2)."""
from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Sequence
from itertools import count
from typing import ClassVar

from normalization_core.naming.base import EMPTY_IDENTIFIER, NamingConvention, strip_accents

_RE_WHITESPACE = re.compile(r"\s+")
_RE_NON_ALPHANUMERIC = re.compile(r"[^a-zA-Z0-9_]")
DBT_RESERVED_LENGTH = 12 + 8
"""Airbyte keeps 12 characters for dbt suffixes and 8 for `_ab1`-style suffixes and a 3-character hash."""
MINIMUM_PARENT_LENGTH = 10
"""Shortest parent prefix kept in a hashed nested table name."""
_HASH_JOINER = "&airbyte&"


def transform_standard_naming(name: str) -> str:
    """Airbyte's standard naming: strip, strip accents, whitespace runs and non-`[A-Za-z0-9_]` -> `_`."""
    result = strip_accents(name.strip())
    result = _RE_WHITESPACE.sub("_", result)
    return _RE_NON_ALPHANUMERIC.sub("_", result)


def truncate_middle(name: str, limit: int) -> str:
    """Airbyte's middle truncation to `limit` characters, marking the cut with `__`."""
    if len(name) <= limit:
        return name
    middle = round(limit / 2)  # half-to-even, as in Airbyte
    return f"{name[:limit - middle - 1]}__{name[len(name) - (middle - 1):]}"


def hash_json_path(parts: Sequence[str]) -> str:
    """First 3 hex digits of sha1 of the lower-cased `&airbyte&`-joined parts."""
    joined = _HASH_JOINER.join(parts).encode("utf-8").lower()
    return hashlib.sha1(joined).hexdigest()[:3]


class AirbyteNaming(NamingConvention):
    """Standard naming, lower-cased, middle-truncated to the identifier limit minus 20 (63 -> 43).

    Names may start with a digit (Airbyte keeps `100x2001`). Nested tables are named by the JSON path
    joined with `_`; `hashed_child_table_name` gives the name Airbyte uses when such names collide.
    """

    name: ClassVar[str] = "airbyte"
    path_separator: ClassVar[str] = "_"
    default_max_identifier_length: ClassVar[int] = 63
    min_identifier_length: ClassVar[int] = DBT_RESERVED_LENGTH + 20

    @property
    def usable_length(self) -> int:
        """Longest name Airbyte produces: the identifier limit minus the dbt reserve."""
        return self.max_identifier_length - DBT_RESERVED_LENGTH

    def normalize_identifier(self, identifier: str) -> str:
        standard = transform_standard_naming(identifier)
        if not standard:  # blank, or only marks that strip_accents drops (a lone combining vowel sign)
            return EMPTY_IDENTIFIER
        return self.shorten(standard).lower()

    def shorten(self, name: str) -> str:
        return truncate_middle(name, self.usable_length)

    def child_table_name(self, parent_table: str, key_path: tuple[str, ...]) -> str:
        """`"_".join(json_path)` normalized; pass the stream and the full key path from the root."""
        return self.normalize_table_name("_".join((parent_table, *key_path)))

    def hashed_child_table_name(self, schema: str, json_path: Sequence[str]) -> str:
        """Airbyte's name for a table whose plain name collides within `schema`.

        `json_path` is [stream, key, ...] in raw names; a single element names a root table.
        """
        norm_schema = transform_standard_naming(schema).lower()
        path_hash = hash_json_path([norm_schema, *json_path])
        if len(json_path) == 1:
            return self.normalize_table_name(f"{json_path[0]}_{path_hash}")
        parent = self._unlimited("_".join(json_path[:-1]))
        child = self._unlimited(json_path[-1])
        return self._nested_hashed_name(parent, path_hash, child)

    def row_key_column(self, name: str, repeats_parent_at: int | None = None) -> str:
        """`_airbyte_<name>_hashid` for a stream or nested field `name`, as Airbyte forms it: the name
        normalized as a table name, the column cut to the usable length; a child whose name repeats its
        parent's gets its level (`_airbyte_<name>_2_hashid`)."""
        base = self.normalize_table_name(name)
        level = f"_{repeats_parent_at}" if repeats_parent_at is not None else ""
        return self.normalize_identifier(f"_airbyte_{base}{level}_hashid")

    def raw_table_name(self, stream: str) -> str:
        """`_airbyte_raw_<stream>`: standard naming, lower-cased, never truncated (as Airbyte's raw tables)."""
        return "_airbyte_raw_" + self._unlimited(stream)

    def collision_candidates(self, original: str, name: str, written: str) -> Iterator[str]:
        """`<written>_1`, `<written>_2`, ... normalized, as Airbyte names clashing columns (its tables and
        columns are named alike, so one normalizer serves both)."""
        for index in count(1):
            yield self.normalize_identifier(f"{written}_{index}")

    def _unlimited(self, name: str) -> str:
        return transform_standard_naming(name).lower()

    def _nested_hashed_name(self, parent: str, path_hash: str, child: str) -> str:
        limit = self.usable_length
        fixed = len(path_hash) + 2
        parent_keep = min(MINIMUM_PARENT_LENGTH, len(parent))
        if len(parent) + fixed + len(child) < limit:
            return f"{parent}_{path_hash}_{child}"
        if parent_keep + fixed + len(child) < limit:
            return f"{parent[:limit - fixed - len(child)]}_{path_hash}_{child}"
        # Airbyte passes this as a custom limit, which it lowers by one before truncating.
        child_limit = limit - fixed - parent_keep - 1
        return f"{parent[:parent_keep]}_{path_hash}_{truncate_middle(child, child_limit)}"
