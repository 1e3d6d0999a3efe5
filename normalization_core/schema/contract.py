"""dlt's schema contracts (SPEC §5.4): what a load may change in an inferred stream's schema.

`tables` governs new tables (a stream's first table too, as in dlt), `columns` new columns of existing
tables, `data_type` values that do not fit their column's type (a new variant column). Pure: compares the
stored schema with the one a load needs.

`freeze` refuses the load. `discard_row` and `discard_value` keep the stored schema as it is and say what
of the load's rows is left out (`Discards`): as dlt, a row (with its nested rows) holding a value for a
discarded column, or only that value; every row of a discarded table.
"""
from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass, field

from normalization_core.errors import ContractViolation
from normalization_core.schema.model import StreamSchema

DISCARD_ROW, DISCARD_VALUE = "discard_row", "discard_value"


@dataclass(frozen=True)
class SchemaContract:
    """dlt's `schema_contract`: a mode per entity (SPEC §5.4)."""

    tables: str = "evolve"
    columns: str = "evolve"
    data_type: str = "evolve"


@dataclass(frozen=True)
class Discards:
    """What a contract leaves out of a load: by table name."""

    tables: frozenset[str] = frozenset()
    """Tables none of whose rows are written."""
    rows: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Columns whose non-null value discards its row (and the rows nested in it)."""
    values: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Columns whose values are discarded (the rest of the row is written)."""

    def __bool__(self) -> bool:
        return bool(self.tables or self.rows or self.values)


NO_DISCARDS = Discards()


def schema_changes(previous: StreamSchema | None, schema: StreamSchema) -> Iterator[tuple[str, str]]:
    """(entity, what changes) for each change `schema` makes to `previous` (None: a new stream)."""
    for entity, _, _, change in _changes(previous, schema):
        yield entity, change


def _changes(previous: StreamSchema | None, schema: StreamSchema) -> Iterator[tuple[str, str, str | None, str]]:
    """(entity, table, column or None, what changes) for each change."""
    before = {t["name"]: {c["name"] for c in t["columns"]} for t in (previous or {"tables": []})["tables"]}
    for table in schema["tables"]:
        name = table["name"]
        if name not in before:
            yield "tables", name, None, f"add table {name!r}"
            continue
        for column in table["columns"]:
            if column["name"] in before[name]:
                continue
            if "variant_of" in column:
                yield "data_type", name, column["name"], (
                    f"add variant column {column['name']!r} to {name!r} for values "
                    f"that are not {column['variant_of']!r}'s type")
            else:
                yield "columns", name, column["name"], f"add column {column['name']!r} to table {name!r}"


def check_contract(source: str, stream: str, contract: SchemaContract, previous: StreamSchema | None,
                   schema: StreamSchema) -> None:
    """Raise `ContractViolation` for the first change a frozen entity forbids."""
    apply_contract(source, stream, contract, previous, schema)


def apply_contract(source: str, stream: str, contract: SchemaContract, previous: StreamSchema | None,
                   schema: StreamSchema) -> tuple[StreamSchema, Discards]:
    """The schema the contract lets the load store, and what of the load it discards; `ContractViolation`
    for the first change a frozen entity forbids. A variant of a discarded new column goes with it (dlt drops
    the row or value before typing it)."""
    tables: set[str] = set()
    modes: dict[tuple[str, str], str] = {}
    for entity, table, column, change in _changes(previous, schema):
        mode = getattr(contract, entity)
        if column is not None and entity == "data_type":
            main = _variant_main(schema, table, column)
            mode = modes.get((table, main), mode)
        if mode == "freeze":
            raise ContractViolation(source, stream, entity, change)
        if mode in (DISCARD_ROW, DISCARD_VALUE):
            if column is None:
                tables.add(table)
            else:
                modes[(table, column)] = mode
    if not tables and not modes:
        return schema, NO_DISCARDS
    rows: dict[str, list[str]] = {}
    values: dict[str, list[str]] = {}
    for (table, column), mode in modes.items():
        (rows if mode == DISCARD_ROW else values).setdefault(table, []).append(column)
    discards = Discards(frozenset(tables), {t: tuple(c) for t, c in rows.items()},
                        {t: tuple(c) for t, c in values.items()})
    return kept_schema(schema, discards), discards


def _variant_main(schema: StreamSchema, table: str, column: str) -> str:
    found = next(t for t in schema["tables"] if t["name"] == table)
    return next(c["variant_of"] for c in found["columns"] if c["name"] == column)


def kept_schema(schema: StreamSchema, discards: Discards) -> StreamSchema:
    """`schema` without the discarded tables and columns."""
    kept = copy.deepcopy(schema)
    kept["tables"] = [t for t in kept["tables"] if t["name"] not in discards.tables]
    for table in kept["tables"]:
        gone = set(discards.rows.get(table["name"], ())) | set(discards.values.get(table["name"], ()))
        table["columns"] = [c for c in table["columns"] if c["name"] not in gone]
    return kept
