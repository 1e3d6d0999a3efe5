"""dlt's `direct` convention (SPEC §4.4): names kept as they are, with the fewest changes Delta needs.

dlt's own rules: strip; newlines, quotes and the path separator `▶` become `_`; nesting levels are joined
with `▶`. Delta (without column mapping) also refuses ` ,;{}()\\t=` in column names, and Arrow (delta-rs,
polars) a NUL, so those become `_` too; every other character (a backtick, a dot, a control character,
unicode) is written and read back by Spark, delta-rs, polars and DuckDB. A table name names a folder and a
catalog table, which Spark's catalog accepts only of `[A-Za-z0-9_]` (even quoted): accents are stripped and
every other character becomes `_`, and a child table's levels are joined with `__` (`folder_safe`).
"""
from __future__ import annotations

from functools import lru_cache
from typing import ClassVar

from normalization_core.naming.base import (
    EMPTY_IDENTIFIER,
    TABLE_NAME_CHARACTERS,
    NamingConvention,
    shorten_with_tag,
    strip_accents,
)

PATH_SEPARATOR = "▶"
TABLE_PATH_SEPARATOR = "__"
"""Joins a child table's levels (`Orders__Line_Items`; dlt's `▶` is no catalog name's character)."""
_DLT_CLEANUP = str.maketrans("\n\r'\"" + PATH_SEPARATOR, "_____")
_DELTA_ILLEGAL = str.maketrans(" ,;{}()\t=\x00", "__________")  # (NUL: Arrow's, not Delta's)


@lru_cache(maxsize=1 << 16)
def normalize_direct_identifier(identifier: str, max_length: int | None) -> str:
    stripped = identifier.strip()
    if not stripped:
        return EMPTY_IDENTIFIER
    name = stripped.translate(_DLT_CLEANUP).translate(_DELTA_ILLEGAL)
    return shorten_with_tag(name, stripped, max_length)


def folder_safe(name: str) -> str:
    """`name` as a table name no folder, shell or catalog needs quoted: `[A-Za-z0-9_]` only, one character for
    one (accents stripped: `Café` -> `Cafe`, `Straße` -> `Stra_e`, `../x` -> `___x`)."""
    return "".join(_table_character(c) for c in name)


@lru_cache(maxsize=1 << 12)
def _table_character(character: str) -> str:
    plain = strip_accents(character)
    return plain if len(plain) == 1 and TABLE_NAME_CHARACTERS.fullmatch(plain) else "_"


class DirectNaming(NamingConvention):
    """Case and unicode kept; `▶` between nesting levels (dlt's `naming="direct"`)."""

    name: ClassVar[str] = "direct"
    path_separator: ClassVar[str] = PATH_SEPARATOR

    def normalize_identifier(self, identifier: str) -> str:
        return normalize_direct_identifier(identifier, self.max_identifier_length)

    def normalize_path(self, path: str) -> str:
        parts = [self.normalize_identifier(part) for part in path.split(self.path_separator) if part.strip()]
        if not parts:
            return EMPTY_IDENTIFIER
        return shorten_with_tag(self.make_path(*parts), path, self.max_identifier_length)

    def normalize_table_name(self, name: str) -> str:
        return folder_safe(self.normalize_identifier(name))

    def child_table_name(self, parent_table: str, key_path: tuple[str, ...]) -> str:
        parts = [self.normalize_path(part) for part in (parent_table, *key_path)]
        joined = TABLE_PATH_SEPARATOR.join(part for part in parts if part.strip()).replace(
            PATH_SEPARATOR, TABLE_PATH_SEPARATOR)  # a key holding `▶` is a path, as in a column name
        return folder_safe(shorten_with_tag(joined, joined, self.max_identifier_length))
