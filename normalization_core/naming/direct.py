"""dlt's `direct` convention (SPEC §4.4): names kept as they are, with the fewest changes Delta needs.

dlt's own rules: strip; newlines, quotes and the path separator `▶` become `_`; nesting levels are joined
with `▶`. Delta (without column mapping) also refuses ` ,;{}()\\t=` in column names, so those become `_`
too, and a table name, which names a folder, has no `/`, `\\` or `:` and does not start with a dot.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import ClassVar

from normalization_core.naming.base import EMPTY_IDENTIFIER, NamingConvention, shorten_with_tag

PATH_SEPARATOR = "▶"
_DLT_CLEANUP = str.maketrans("\n\r'\"" + PATH_SEPARATOR, "_____")
_DELTA_ILLEGAL = str.maketrans(" ,;{}()\t=", "_________")
_FOLDER_ILLEGAL = str.maketrans("/\\:", "___")
_LEADING_DOTS = re.compile(r"^\.+")


@lru_cache(maxsize=1 << 16)
def normalize_direct_identifier(identifier: str, max_length: int | None) -> str:
    stripped = identifier.strip()
    if not stripped:
        return EMPTY_IDENTIFIER
    name = stripped.translate(_DLT_CLEANUP).translate(_DELTA_ILLEGAL)
    return shorten_with_tag(name, stripped, max_length)


def folder_safe(name: str) -> str:
    """`name` usable as one folder of a table path: no separators, no leading dot (`..`, hidden files)."""
    name = name.translate(_FOLDER_ILLEGAL)
    return _LEADING_DOTS.sub(lambda dots: "_" * len(dots.group()), name)


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
        return folder_safe(super().child_table_name(parent_table, key_path))
