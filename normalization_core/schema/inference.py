"""A stream's tables inferred from the (JSON path, value kind) pairs seen in its data (SPEC §5.2, §5.3).

Pure Python: the pairs come from `transform.observed_kinds.observed_types`. The pairs are turned into the same
node tree a catalog's JSON Schema gives, and laid out by the same code, so names, nesting and the
nesting limit behave exactly as for catalog streams. The result depends only on the SET of pairs:
a column's main type is chosen from its kinds by a fixed precedence (`schema.column_types`), keys are sorted.

Variant columns: a kind the main type does not accept gets a column `<column>__v_<family>` (dlt), where
the family is the value's JSON type (`text` for every string, also an ISO timestamp). `evolve` keeps
every name, table and type of the previous version and only adds.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace

from normalization_core.naming import AirbyteNaming, NamingConvention
from normalization_core.naming.conventions import DEFAULT_CONVENTION, convention_named
from normalization_core.schema.airbyte_layout import name_inferred_keys
from normalization_core.schema.column_types import (
    ACCEPTS,
    ARRAY_STEP,
    EPOCH,
    FAMILY,
    KEY_STEP,
    KIND_OF_LOGICAL,
    LOGICAL_OF_KIND,
    MAIN_PRECEDENCE,
    SCALAR_KINDS,
    STRUCTURAL_KINDS,
    ColumnSpec,
    ColumnSpecs,
    Steering,
    variant_accepts,
)
from normalization_core.schema.dlt_layout import DltLayout
from normalization_core.schema.json_schema_nodes import Arr, Json, Mixed, Node, Obj, Scalar
from normalization_core.schema.model import (
    LOGICAL_DATA_TYPES,
    ColumnSchema,
    StreamSchema,
    TableSchema,
    find_table,
)

Observed = Iterable[tuple[tuple[str, ...], str]]


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


def _build(stream: str, observed: Observed, convention: str, max_length: int | None, max_nesting: int,
           steering: Steering, previous: StreamSchema | None) -> StreamSchema:
    chosen = convention_named(convention, "inference")
    root = _previous_tree(previous) if previous is not None else _Path()
    for steps, kind in sorted(set(observed)):
        root.at(steps).kinds.add(kind)
    conv = chosen.naming(max_length)
    if chosen.system_names.record_row_key:  # a record's own row key is text, whatever its values
        steering = replace(steering, data_types={**steering.data_types, chosen.system_names.row_id(stream): "text"})
    specs = ColumnSpecs(steering, max_nesting, conv)
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


def _node(path: _Path, steps: tuple[str, ...], specs: ColumnSpecs) -> Node | None:
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


def _keeps_one_shape(steps: tuple[str, ...], specs: ColumnSpecs) -> bool:
    """Array elements and values past the nesting limit keep one shape: mixed kinds there are JSON text."""
    return steps[-1:] == (ARRAY_STEP,) or _depth(steps) > specs.max_nesting


def _depth(steps: tuple[str, ...]) -> int:
    """The nesting level of the value at `steps` as the layout counts it (an element shares its array's level,
    except an array in an array)."""
    return sum(step != ARRAY_STEP or previous == ARRAY_STEP for previous, step in zip(("",) + steps, steps))


def _one_shape(path: _Path, steps: tuple[str, ...], specs: ColumnSpecs) -> Node | None:
    """The shape pinned by the previous version (other kinds: variants or NULLED), else the one kind seen."""
    if "column" in path.pinned:
        return _pinned_column(path, steps, specs, structural_variant=True)
    if "object" in path.pinned:
        return _object_part(path, steps, specs)
    if "array" in path.pinned:
        return _array_part(path, steps, specs)
    structural = [k for k in STRUCTURAL_KINDS if k in path.kinds]
    if len(structural) + bool(path.kinds & SCALAR_KINDS) > 1:
        return Json("object")  # an object here, an array or a scalar there: kept whole as JSON text
    return _scalar_part(path, steps, specs) or _object_part(path, steps, specs) or _array_part(path, steps, specs)


def _scalar_part(path: _Path, steps: tuple[str, ...], specs: ColumnSpecs) -> Scalar | None:
    if "column" in path.pinned:
        return _pinned_column(path, steps, specs)
    scalars = [k for k in MAIN_PRECEDENCE if k in path.kinds]
    if not scalars:
        return None  # seen only as null, or only as a container: no column yet
    main = specs.hint(steps) or specs.epoch(path.kinds) or specs.type_of(scalars)
    variants = specs.new_variants(main, set(scalars), {})
    specs[steps] = ColumnSpec(main, tuple(variants))
    return Scalar(LOGICAL_OF_KIND[main], main)


def _object_part(path: _Path, steps: tuple[str, ...], specs: ColumnSpecs) -> Obj | None:
    if "object" in path.pinned:
        return Obj(tuple(_properties(path, steps, specs)))
    if "object" not in path.kinds:
        return None
    node = _fresh_object(path, steps, specs)
    return node if isinstance(node, Obj) else None


def _array_part(path: _Path, steps: tuple[str, ...], specs: ColumnSpecs) -> Arr | None:
    if "array" not in path.pinned and ("array" not in path.kinds or path.items is None):
        return None  # an array seen only empty gives no table yet
    items = _node(path.items or _Path(), (*steps, ARRAY_STEP), specs)
    return Arr(items) if items is not None else None


def _fresh_object(path: _Path, steps: tuple[str, ...], specs: ColumnSpecs) -> Node | None:
    properties = tuple(_properties(path, steps, specs))
    return Obj(properties) if properties or not steps else None


def _properties(path: _Path, steps: tuple[str, ...], specs: ColumnSpecs) -> Iterator[tuple[str, Node]]:
    pinned = [key for key, sub in path.keys.items() if sub.pinned]
    fresh = sorted(key for key, sub in path.keys.items() if not sub.pinned)
    for key in [*pinned, *fresh]:
        node = _node(path.keys[key], (*steps, KEY_STEP + key), specs)
        if node is not None:
            yield key, node


def _pinned_column(path: _Path, steps: tuple[str, ...], specs: ColumnSpecs,
                   structural_variant: bool = False) -> Scalar:
    main = path.main or "text"
    seen = path.kinds & SCALAR_KINDS
    if structural_variant and path.kinds & set(STRUCTURAL_KINDS):
        seen.add("object")
    kept = [(family, kind, variant_accepts(main, family, kind)) for family, kind in path.variants.items()]
    specs[steps] = ColumnSpec(main, tuple([*kept, *specs.new_variants(main, seen, path.variants)]))
    return Scalar(LOGICAL_OF_KIND[main], main)


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


def _with_variants(schema: StreamSchema, table: TableSchema, specs: ColumnSpecs,
                   previous: StreamSchema | None, conv: NamingConvention) -> list[ColumnSchema]:
    """The table's columns, each main column followed by its variant columns."""
    steps = table_steps(schema, table)
    taken = {c["name"].lower() for c in table["columns"]}  # Delta compares names ignoring case
    columns: list[ColumnSchema] = []
    for column in table["columns"]:
        spec = specs.get((*steps, *(KEY_STEP + key for key in column["path"])))
        columns.append(column)
        if spec is None:
            continue
        column["accepts"] = sorted(ACCEPTS[spec.main])
        for family, kind, accepts in spec.variants:
            name = _variant_name(column["name"], family, previous, table["name"], taken, conv)
            taken.add(name.lower())
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
    written = conv.make_path(main, f"v_{family}")
    name = conv.shorten(written)
    if name.lower() not in taken:
        return name
    original = json.dumps([main, family])
    return next(c for c in conv.collision_candidates(original, name, written) if c.lower() not in taken)
