"""Unique names for a set of keys: collisions get a suffix or a hash tag and are reported (SPEC §4)."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from normalization_core.naming.base import NamingConvention

MAX_CANDIDATES = 10_000
"""Give up after this many tries for one key (never reached unless a plug-in yields repeats)."""


@dataclass(frozen=True)
class NameCollision:
    """Keys that normalized to one name and the names each one finally got."""

    name: str
    """The contested name, as its holder has it."""
    originals: tuple[str, ...]
    """The holder first, then every key that wanted the name after it, in processing order."""
    resolved: dict[str, str]
    """Final name of every key in `originals`."""


@dataclass(frozen=True)
class NameAssignment:
    """Result of `assign_names`."""

    mapping: dict[str, str]
    """Original key -> final unique name, for the existing and the new keys."""
    collisions: list[NameCollision] = field(default_factory=list)
    """One entry per contested name, ordered by name."""


def assign_names(
    conv: NamingConvention,
    originals: Sequence[str],
    existing: Mapping[str, str] | None = None,
    normalize: Callable[[str], str] | None = None,
    keep_order: bool = False,
    written: Callable[[str], str] | None = None,
    written_first: bool = False,
) -> NameAssignment:
    """Give every original a final name that no other original has, ignoring case.

    Names in `existing` never change. New keys are taken in sorted order, so the result does not depend
    on input order: the first to reach a free name keeps it, later ones get `conv.collision_candidates`.
    `keep_order` takes them in the given order instead (Airbyte suffixes clashing columns in catalog order).
    `normalize` defaults to `conv.normalize_path` (JSON keys); pass `conv.normalize_table_name` for tables.
    `written` gives an original's name as written (e.g. its keys joined by the path separator; default: the
    original itself), which a suffix convention suffixes; with `written_first` a key already written as its
    normalized name is taken first, so it keeps the name and the other keys get the suffix.
    """
    normalize = normalize or conv.normalize_path
    written = written or str
    mapping = dict(existing or {})
    holders = _holders(mapping)
    contested: dict[str, list[str]] = {}
    new = dict.fromkeys(o for o in originals if o not in mapping)
    for original in (new if keep_order else _in_naming_order(new, normalize, written if written_first else None)):
        plain = normalize(original)
        final = plain
        if plain.lower() in holders:
            contested.setdefault(plain.lower(), [holders[plain.lower()]]).append(original)
            final = _first_free(conv, original, plain, written(original), holders)
        holders[final.lower()] = original
        mapping[original] = final
    collisions = [_report(mapping, members) for _, members in sorted(contested.items())]
    return NameAssignment(mapping=mapping, collisions=collisions)


def _in_naming_order(originals: Iterable[str], normalize: Callable[[str], str],
                     written: Callable[[str], str] | None) -> list[str]:
    """Sorted, keys already written as their normalized name first (order independent either way)."""
    if written is None:
        return sorted(originals)
    return sorted(originals, key=lambda original: (written(original) != normalize(original), original))


def _holders(existing: Mapping[str, str]) -> dict[str, str]:
    """Case-folded name -> the original holding it; existing names must already be unique."""
    holders: dict[str, str] = {}
    for original, name in existing.items():
        other = holders.setdefault(name.lower(), original)
        if other != original:
            raise ValueError(f"existing names are not unique: {other!r} and {original!r} both map to {name!r}")
    return holders


def _first_free(conv: NamingConvention, original: str, plain: str, written: str,
                holders: Mapping[str, str]) -> str:
    candidates = conv.collision_candidates(original, plain, written)
    for _, candidate in zip(range(MAX_CANDIDATES), candidates):
        if candidate.lower() not in holders:
            return candidate
    raise RuntimeError(f"naming convention {conv.name!r}: no free name for {original!r} "
                       f"after {MAX_CANDIDATES} candidates")


def _report(mapping: Mapping[str, str], members: list[str]) -> NameCollision:
    holder = members[0]
    return NameCollision(name=mapping[holder], originals=tuple(members),
                         resolved={original: mapping[original] for original in members})
