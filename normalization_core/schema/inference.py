"""A stream's tables inferred from the (JSON path, value kind) pairs seen in its data (SPEC §5.2, §5.3).

Pure Python: the pairs come from `transform.observed_kinds.observed_types`. The pairs are turned into the same
node tree a catalog's JSON Schema gives, and laid out by the same code, so names, nesting and the
nesting limit behave exactly as for catalog streams. The result depends only on the SET of pairs:
a column's main type is chosen from its kinds by a fixed precedence, keys are sorted.

Variant columns: a kind the main type does not accept gets a column `<column>__v_<family>` (dlt), where
the family is the value's JSON type (`text` for every string, also an ISO timestamp). `evolve` keeps
every name, table and type of the previous version and only adds.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from normalization_core.conventions import DEFAULT_CONVENTION, convention_named
from normalization_core.naming import AirbyteNaming, NamingConvention
from normalization_core.schema.airbyte_layout import name_inferred_keys
from normalization_core.schema.dlt_layout import DltLayout
from normalization_core.schema.json_schema_nodes import Arr, Json, Mixed, Node, Obj, Scalar
from normalization_core.schema.model import (
    LOGICAL_DATA_TYPES,
    ColumnSchema,
    StreamSchema,
    TableSchema,
    find_table,
)

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
_SCALARS = frozenset(MAIN_PRECEDENCE)
_NUMBERS = frozenset({"bigint", "double", "decimal"})
ACCEPTS: dict[str, frozenset[str]] = {
    "double": frozenset({"bigint", "double"}), "decimal": frozenset({"bigint", "decimal"}),
    "bigint": frozenset({"bigint"}), "bool": frozenset({"bool"}), "timestamp": frozenset({"timestamp", "date"}),
    "date": frozenset({"date"}), "text": _SCALARS, "json": _SCALARS | frozenset(STRUCTURAL_KINDS),
    EPOCH: frozenset({"timestamp", "date"}) | _NUMBERS,
}
"""Value kinds a column of each type takes (dlt's coercions that cannot lose anything)."""
FAMILY = {"text": "text", "timestamp": "text", "date": "text", "bigint": "bigint", "double": "double",
          "decimal": "decimal", "bool": "bool", "object": "json", "array": "json"}
"""Variant suffix of each value kind: its JSON type."""
DEFAULT_DETECTIONS = ("iso_timestamp",)
"""dlt's default: ISO timestamps are detected, bare ISO dates (`iso_date`) stay text."""
Observed = Iterable[tuple[tuple[str, ...], str]]


@dataclass(frozen=True)
class Steering:
    """What steers inference besides the data (dlt's schema settings, SPEC §5.4)."""

    detections: tuple[str, ...] = DEFAULT_DETECTIONS
    data_types: dict[str, str] = field(default_factory=dict)
    """dlt data type of root columns by record key (`columns` hints), matched after normalizing."""
    preferred_types: tuple[tuple[str, str], ...] = ()
    """(column name or `re:<regex>`, dlt data type): the type of a new column of any table whose name matches
    (regexes are searched in the normalized name, names are normalized and compared whole), after hints."""


def infer_schema(stream: str, observed: Observed, convention: str = DEFAULT_CONVENTION,
                 max_identifier_length: int | None = None, max_table_nesting: int = 1000,
                 steering: Steering = Steering()) -> StreamSchema:
    """The first schema of a stream from the (path, kind) pairs of its data."""
    return _build(stream, observed, convention, max_identifier_length, max_table_nesting, steering, None)


def evolve(previous: StreamSchema, observed: Observed, steering: Steering = Steering()) -> StreamSchema:
    """`previous` plus the new columns, tables and variants the pairs need; nothing is renamed or retyped."""
    return _build(previous["stream"], observed, previous["convention"], previous["max_identifier_length"],
                  previous["max_table_nesting"], steering, previous)


@dataclass
class _Path:
    """What is known at one JSON path: kinds seen, and the shape a previous version gave it."""

    kinds: set[str] = field(default_factory=set)
    keys: dict[str, _Path] = field(default_factory=dict)
    items: _Path | None = None
    pinned: set[str] = field(default_factory=set)
    """`column`, `json`, `object`, `array`: the previous version's shapes here, which never change (a key
    whose values differ in kind has several)."""
    main: str | None = None
    variants: dict[str, str] = field(default_factory=dict)
    """Pinned variant kind per family."""

    def at(self, steps: Iterable[str]) -> _Path:
        node = self
        for step in steps:
            if step == ARRAY_STEP:
                node.items = node.items or _Path()
                node = node.items
            else:
                node = node.keys.setdefault(step[len(KEY_STEP):], _Path())
        return node


@dataclass(frozen=True)
class _Spec:
    """Main kind of a scalar column and its variants: (family, kind, accepted kinds)."""

    main: str
    variants: tuple[tuple[str, str, frozenset[str]], ...]


def _build(stream: str, observed: Observed, convention: str, max_length: int | None, max_nesting: int,
           steering: Steering, previous: StreamSchema | None) -> StreamSchema:
    chosen = convention_named(convention, "inference")
    root = _previous_tree(previous) if previous is not None else _Path()
    for steps, kind in sorted(set(observed)):
        root.at(steps).kinds.add(kind)
    conv = chosen.naming(max_length)
    specs = _Specs(steering.detections, max_nesting, _HintIndex(steering.data_types, conv),
                   _PreferredTypes(steering.preferred_types, conv))
    record = _node(root, (), specs) if root.pinned else _fresh_object(root, (), specs)
    layout = DltLayout(conv, chosen.system_names, max_nesting, previous)  # every convention's inferred layout
    tables, collisions = layout.build(stream, record if isinstance(record, Obj) else Obj(()))
    schema = StreamSchema(stream=stream, convention=convention, max_identifier_length=conv.max_identifier_length,
                          max_table_nesting=max_nesting, tables=tables, collisions=collisions, inferred=True)
    if isinstance(conv, AirbyteNaming):  # keys named as Airbyte's, within the identifier limit
        name_inferred_keys(conv, schema, previous)
    for table in tables:
        table["columns"] = _with_variants(schema, table, specs, previous, conv)
    return schema


class _Specs(dict):
    """Column specs by path steps, and the detections that decide which string kinds type a column."""

    def __init__(self, detections: tuple[str, ...], max_nesting: int, hinted: _HintIndex,
                 preferred: _PreferredTypes) -> None:
        super().__init__()
        self.detections = detections
        self.max_nesting = max_nesting
        self.hinted = hinted
        self.preferred = preferred

    def hint(self, steps: tuple[str, ...]) -> str | None:
        """The kind a column hint (root columns) or a preferred type gives the new column at `steps`."""
        hinted = self.hinted.get(steps[0][len(KEY_STEP):]) if len(steps) == 1 else None
        return hinted or self.preferred.kind_of(steps)

    def epoch(self, kinds: set[str]) -> str | None:
        """dlt's `timestamp` detection: a column of numbers that are all epoch seconds near their records' time."""
        scalars = kinds & _SCALARS
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


def _node(path: _Path, steps: tuple[str, ...], specs: _Specs) -> Node | None:
    """The node of one path: each kind of value placed by its kind, as dlt does (SPEC §5.2)."""
    if "json" in path.pinned or not path.pinned and specs.hint(steps) == "json":
        return Json("object")
    if _keeps_one_shape(steps, specs):
        return _one_shape(path, steps, specs)
    parts = (_scalar_part(path, steps, specs), _object_part(path, steps, specs), _array_part(path, steps, specs))
    present = [part for part in parts if part is not None]
    if len(present) > 1:
        return Mixed(*parts)
    return present[0] if present else None


def _keeps_one_shape(steps: tuple[str, ...], specs: _Specs) -> bool:
    """Array elements and values past the nesting limit keep one shape: mixed kinds there are JSON text."""
    return steps[-1:] == (ARRAY_STEP,) or _depth(steps) > specs.max_nesting


def _depth(steps: tuple[str, ...]) -> int:
    """The nesting level of the value at `steps` as the layout counts it (an element shares its array's level,
    except an array in an array)."""
    return sum(step != ARRAY_STEP or previous == ARRAY_STEP for previous, step in zip(("",) + steps, steps))


def _one_shape(path: _Path, steps: tuple[str, ...], specs: _Specs) -> Node | None:
    """The shape pinned by the previous version (other kinds: variants or NULLED), else the one kind seen."""
    if "column" in path.pinned:
        return _pinned_column(path, steps, specs, structural_variant=True)
    if "object" in path.pinned:
        return _object_part(path, steps, specs)
    if "array" in path.pinned:
        return _array_part(path, steps, specs)
    structural = [k for k in STRUCTURAL_KINDS if k in path.kinds]
    if len(structural) + bool(path.kinds & _SCALARS) > 1:
        return Json("object")  # an object here, an array or a scalar there: kept whole as JSON text
    return _scalar_part(path, steps, specs) or _object_part(path, steps, specs) or _array_part(path, steps, specs)


def _scalar_part(path: _Path, steps: tuple[str, ...], specs: _Specs) -> Scalar | None:
    if "column" in path.pinned:
        return _pinned_column(path, steps, specs)
    scalars = [k for k in MAIN_PRECEDENCE if k in path.kinds]
    if not scalars:
        return None  # seen only as null, or only as a container: no column yet
    main = specs.hint(steps) or specs.epoch(path.kinds) or specs.type_of(scalars)
    variants = _new_variants(main, set(scalars), {}, specs)
    specs[steps] = _Spec(main, tuple(variants))
    return Scalar(LOGICAL_OF_KIND[main], main)


def _object_part(path: _Path, steps: tuple[str, ...], specs: _Specs) -> Obj | None:
    if "object" in path.pinned:
        return Obj(tuple(_properties(path, steps, specs)))
    if "object" not in path.kinds:
        return None
    node = _fresh_object(path, steps, specs)
    return node if isinstance(node, Obj) else None


def _array_part(path: _Path, steps: tuple[str, ...], specs: _Specs) -> Arr | None:
    if "array" not in path.pinned and ("array" not in path.kinds or path.items is None):
        return None  # an array seen only empty gives no table yet
    items = _node(path.items or _Path(), (*steps, ARRAY_STEP), specs)
    return Arr(items) if items is not None else None


def _fresh_object(path: _Path, steps: tuple[str, ...], specs: _Specs) -> Node | None:
    properties = tuple(_properties(path, steps, specs))
    return Obj(properties) if properties or not steps else None


def _properties(path: _Path, steps: tuple[str, ...], specs: _Specs) -> Iterator[tuple[str, Node]]:
    pinned = [key for key, sub in path.keys.items() if sub.pinned]
    fresh = sorted(key for key, sub in path.keys.items() if not sub.pinned)
    for key in [*pinned, *fresh]:
        node = _node(path.keys[key], (*steps, KEY_STEP + key), specs)
        if node is not None:
            yield key, node


def _pinned_column(path: _Path, steps: tuple[str, ...], specs: _Specs, structural_variant: bool = False) -> Scalar:
    main = path.main or "text"
    seen = path.kinds & _SCALARS
    if structural_variant and path.kinds & set(STRUCTURAL_KINDS):
        seen.add("object")
    kept = [(family, kind, _variant_accepts(main, family, kind)) for family, kind in path.variants.items()]
    specs[steps] = _Spec(main, tuple([*kept, *_new_variants(main, seen, path.variants, specs)]))
    return Scalar(LOGICAL_OF_KIND[main], main)


def _new_variants(main: str, kinds: set[str], existing: dict[str, str], specs: _Specs
                  ) -> list[tuple[str, str, frozenset[str]]]:
    """A variant per family of kinds the main type and the existing variants do not take."""
    covered = set(ACCEPTS[main])
    for family, kind in existing.items():
        covered |= _variant_accepts(main, family, kind)
    by_family: dict[str, set[str]] = {}
    for kind in kinds - covered:
        by_family.setdefault(FAMILY[kind], set()).add(kind)
    variants = []
    for family in sorted(set(by_family) - set(existing)):  # a family already taken stays NULLED + change
        kinds_of_family = by_family[family]
        kind = "json" if family == "json" else specs.type_of(kinds_of_family)
        variants.append((family, kind, _variant_accepts(main, family, kind)))
    return variants


def _variant_accepts(main: str, family: str, kind: str) -> frozenset[str]:
    return frozenset(k for k in ACCEPTS[kind] if FAMILY[k] == family) - ACCEPTS[main]


def _previous_tree(previous: StreamSchema) -> _Path:
    """The shapes and types `previous` gave each path, pinned so that evolution never changes them."""
    root = _Path(pinned={"object"})
    for table in previous["tables"]:
        steps = table_steps(previous, table)
        for i, step in enumerate(steps):
            container = root.at(steps[:i])
            container.pinned.add("array" if step == ARRAY_STEP else "object")
        if table["element"] in ("record", "object"):
            root.at(steps).pinned.add("object")
        for column in table["columns"]:
            keys = tuple(KEY_STEP + key for key in column["path"])
            for i in range(len(keys) - 1):
                root.at((*steps, *keys[:i + 1])).pinned.add("object")
            _pin_column(root.at((*steps, *keys)), column)
    return root


def _pin_column(node: _Path, column: ColumnSchema) -> None:
    kind = KIND_OF_LOGICAL.get(column["logical_type"], "json")
    if kind == "timestamp" and "bigint" in column.get("accepts", ()):
        kind = EPOCH
    if "variant_of" in column:
        node.variants[_family(column)] = kind
    elif kind == "json" and "accepts" not in column:
        node.pinned.add("json")
    else:
        node.pinned.add("column")
        node.main = kind


def _family(variant: ColumnSchema) -> str:
    """A variant column's family: the one all its accepted kinds belong to."""
    return FAMILY[variant["accepts"][0]]


def table_steps(schema: StreamSchema, table: TableSchema) -> tuple[str, ...]:
    """Path steps from the record to the table's rows."""
    if table["parent"] is None:
        return ()
    parent = table_steps(schema, find_table(schema, table["parent"]))
    return (*parent, *(KEY_STEP + key for key in table["path"]), ARRAY_STEP)


def _with_variants(schema: StreamSchema, table: TableSchema, specs: _Specs,
                   previous: StreamSchema | None, conv: NamingConvention) -> list[ColumnSchema]:
    """The table's columns, each main column followed by its variant columns."""
    steps = table_steps(schema, table)
    taken = {c["name"] for c in table["columns"]}
    columns: list[ColumnSchema] = []
    for column in table["columns"]:
        spec = specs.get((*steps, *(KEY_STEP + key for key in column["path"])))
        columns.append(column)
        if spec is None:
            continue
        column["accepts"] = sorted(ACCEPTS[spec.main])
        for family, kind, accepts in spec.variants:
            name = _variant_name(column["name"], family, previous, table["name"], taken, conv)
            taken.add(name)
            logical = LOGICAL_OF_KIND[kind]
            columns.append(ColumnSchema(name=name, path=list(column["path"]),
                                        data_type=LOGICAL_DATA_TYPES[logical],
                                        logical_type=logical, json_text=logical == "json", accepts=sorted(accepts),
                                        variant_of=column["name"]))
    return columns


def _variant_name(main: str, family: str, previous: StreamSchema | None, table: str, taken: set[str],
                  conv: NamingConvention) -> str:
    if previous is not None and any(t["name"] == table for t in previous["tables"]):
        for column in find_table(previous, table)["columns"]:
            if column.get("variant_of") == main and _family(column) == family:
                return column["name"]
    name = conv.shorten(conv.make_path(main, f"v_{family}"))
    if name not in taken:
        return name
    original = json.dumps([main, family])
    return next(c for c in conv.collision_candidates(original, name, conv.normalize_path) if c not in taken)
