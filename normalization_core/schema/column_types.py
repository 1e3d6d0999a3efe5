"""How an inferred column's type and its variants are chosen from the kinds of its values (SPEC §5.2, §5.4).

The vocabulary the Spark side (`transform.observed_kinds`, which finds the (path, kind) pairs) and the pure
side (`schema.inference`, which lays the columns out) share, and dlt's rules over it: a column's main type
is the first of its kinds by a fixed precedence, unless a hint, a preferred type or the epoch detection
says otherwise (`Steering`); a kind the main type does not accept gets a variant column per JSON type.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from normalization_core.naming import NamingConvention

KEY_STEP = "k:"
"""Prefix of a path step into an object key (`k:<key>`); `ARRAY_STEP` steps into array elements."""
ARRAY_STEP = "[]"
STRUCTURAL_KINDS = ("object", "array")
MAIN_PRECEDENCE = ("double", "decimal", "bigint", "timestamp", "date", "bool", "text")
"""The main type of a column is the first of these among its scalar kinds (bigint + double -> double)."""
LOGICAL_OF_KIND = {"text": "string", "bool": "boolean", "bigint": "bigint", "double": "double",
                   "decimal": "decimal", "timestamp": "timestamp", "date": "date", "json": "json"}
KIND_OF_LOGICAL = {logical: kind for kind, logical in LOGICAL_OF_KIND.items()}
EPOCH, EPOCH_FAR, EPOCH_RANGE_SECONDS = "epoch", "epoch_far", 5 * 31536000
"""dlt's `timestamp` detection: the main type of a column of numbers that are epoch seconds (a timestamp); the
pseudo kind of a path where a number is not within the range of its record's time (`transform.observed_kinds`)."""
LOGICAL_OF_KIND[EPOCH] = "timestamp"
SCALAR_KINDS = frozenset(MAIN_PRECEDENCE)
_NUMBERS = frozenset({"bigint", "double", "decimal"})
ACCEPTS: dict[str, frozenset[str]] = {
    "double": frozenset({"bigint", "double"}), "decimal": frozenset({"bigint", "decimal"}),
    "bigint": frozenset({"bigint"}), "bool": frozenset({"bool"}), "timestamp": frozenset({"timestamp", "date"}),
    "date": frozenset({"date"}), "text": SCALAR_KINDS, "json": SCALAR_KINDS | frozenset(STRUCTURAL_KINDS),
    EPOCH: frozenset({"timestamp", "date"}) | _NUMBERS,
}
"""Value kinds a column of each type takes (dlt's coercions that cannot lose anything)."""
FAMILY = {"text": "text", "timestamp": "text", "date": "text", "bigint": "bigint", "double": "double",
          "decimal": "decimal", "bool": "bool", "object": "json", "array": "json"}
"""Variant suffix of each value kind: its JSON type."""
DEFAULT_DETECTIONS = ("iso_timestamp",)
"""dlt's default: ISO timestamps are detected, bare ISO dates (`iso_date`) stay text."""

Variant = tuple[str, str, frozenset[str]]
"""A variant column: (family, kind, accepted kinds)."""


@dataclass(frozen=True)
class Steering:
    """What steers inference besides the data (dlt's schema settings, SPEC §5.4)."""

    detections: tuple[str, ...] = DEFAULT_DETECTIONS
    data_types: dict[str, str] = field(default_factory=dict)
    """dlt data type of root columns by record key (`columns` hints), matched after normalizing."""
    preferred_types: tuple[tuple[str, str], ...] = ()
    """(column name or `re:<regex>`, dlt data type): the type of a new column of any table whose name matches
    (regexes are searched in the normalized name, names are normalized and compared whole), after hints."""


@dataclass(frozen=True)
class ColumnSpec:
    """Main kind of a scalar column and its variants."""

    main: str
    variants: tuple[Variant, ...]


class ColumnSpecs(dict):
    """Column specs by path steps, and the detections that decide which string kinds type a column."""

    def __init__(self, steering: Steering, max_nesting: int, conv: NamingConvention) -> None:
        super().__init__()
        self.detections = steering.detections
        self.max_nesting = max_nesting
        self.hinted = _HintIndex(steering.data_types, conv)
        self.preferred = _PreferredTypes(steering.preferred_types, conv)

    def hint(self, steps: tuple[str, ...]) -> str | None:
        """The kind a column hint (root columns) or a preferred type gives the new column at `steps`."""
        hinted = self.hinted.get(steps[0][len(KEY_STEP):]) if len(steps) == 1 else None
        return hinted or self.preferred.kind_of(steps)

    def epoch(self, kinds: set[str]) -> str | None:
        """dlt's `timestamp` detection: a column of numbers that are all epoch seconds near their records' time."""
        scalars = kinds & SCALAR_KINDS
        if "timestamp" in self.detections and scalars and scalars <= _NUMBERS and EPOCH_FAR not in kinds:
            return EPOCH
        return None

    def type_of(self, kinds: Iterable[str]) -> str:
        """The first type by precedence; an undetected string kind types as text (it still fits a timestamp)."""
        detected = {self._detected(kind) for kind in kinds}
        return next(k for k in MAIN_PRECEDENCE if k in detected)

    def _detected(self, kind: str) -> str:
        if (kind == "timestamp" and "iso_timestamp" not in self.detections
                or kind == "date" and "iso_date" not in self.detections):
            return "text"
        return kind

    def new_variants(self, main: str, kinds: set[str], existing: dict[str, str]) -> list[Variant]:
        """A variant per family of kinds the main type and the existing variants do not take."""
        covered = set(ACCEPTS[main])
        for family, kind in existing.items():
            covered |= variant_accepts(main, family, kind)
        by_family: dict[str, set[str]] = {}
        for kind in kinds - covered:
            by_family.setdefault(FAMILY[kind], set()).add(kind)
        variants = []
        for family in sorted(set(by_family) - set(existing)):  # a family already taken stays NULLED + change
            kinds_of_family = by_family[family]
            kind = "json" if family == "json" else self.type_of(kinds_of_family)
            variants.append((family, kind, variant_accepts(main, family, kind)))
        return variants


def variant_accepts(main: str, family: str, kind: str) -> frozenset[str]:
    """The kinds a variant of `family` (typed `kind`) takes beside a main column of type `main`."""
    return frozenset(k for k in ACCEPTS[kind] if FAMILY[k] == family) - ACCEPTS[main]


class _HintIndex(dict):
    """Hinted kinds by normalized name, looked up by record key: dlt normalizes its hints' names too."""

    def __init__(self, data_types: dict[str, str], conv: NamingConvention) -> None:
        super().__init__({conv.normalize_path(key): kind for key, kind in data_types.items()})
        self.conv = conv

    def get(self, key: str, default: str | None = None) -> str | None:  # type: ignore[override]
        return super().get(self.conv.normalize_path(key), default)


class _PreferredTypes:
    """dlt's `preferred_types` over the names columns get in their table."""

    def __init__(self, rules: tuple[tuple[str, str], ...], conv: NamingConvention) -> None:
        self.conv = conv
        self.rules = [(re.compile(name[3:]) if name.startswith("re:") else None, conv.normalize_path(name), kind)
                      for name, kind in rules]

    def kind_of(self, steps: tuple[str, ...]) -> str | None:
        if not self.rules:
            return None
        name = self.column_name(steps)
        for regex, plain, kind in self.rules:
            if regex.search(name) if regex is not None else plain == name:
                return kind
        return None

    def column_name(self, steps: tuple[str, ...]) -> str:
        """The column's name in its table, as the layout forms it (before collisions and shortening)."""
        if steps[-1:] == (ARRAY_STEP,):
            return "value"
        keys = steps[len(steps) - steps[::-1].index(ARRAY_STEP):] if ARRAY_STEP in steps else steps
        return self.conv.make_path(*(self.conv.normalize_path(k[len(KEY_STEP):]) for k in keys))
