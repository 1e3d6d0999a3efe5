"""dlt's schema contracts (SPEC §5.4): what a load may change in an inferred stream's schema.

`tables` governs new tables (a stream's first table too, as in dlt), `columns` new columns of existing
tables, `data_type` values that do not fit their column's type (a new variant column). Pure: compares the
stored schema with the one a load needs.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from normalization_core.config import SchemaContract, SourceConfig
from normalization_core.errors import ContractViolation
from normalization_core.schema.model import StreamSchema


def schema_changes(previous: StreamSchema | None, schema: StreamSchema) -> Iterator[tuple[str, str]]:
    """(entity, what changes) for each change `schema` makes to `previous` (None: a new stream)."""
    before = {t["name"]: {c["name"] for c in t["columns"]} for t in (previous or {"tables": []})["tables"]}
    for table in schema["tables"]:
        if table["name"] not in before:
            yield "tables", f"add table {table['name']!r}"
            continue
        for column in table["columns"]:
            if column["name"] in before[table["name"]]:
                continue
            if "variant_of" in column:
                yield "data_type", (f"add variant column {column['name']!r} to {table['name']!r} for values "
                                    f"that are not {column['variant_of']!r}'s type")
            else:
                yield "columns", f"add column {column['name']!r} to table {table['name']!r}"


def check_contract(source: str, stream: str, contract: SchemaContract, previous: StreamSchema | None,
                   schema: StreamSchema) -> None:
    """Raise `ContractViolation` for the first change a frozen entity forbids."""
    for entity, change in schema_changes(previous, schema):
        if getattr(contract, entity) == "freeze":
            raise ContractViolation(source, stream, entity, change)


def stream_contract(source: SourceConfig, stream: str) -> SchemaContract:
    """The source's contract with the stream's own modes over it."""
    override = source.streams.get(stream)
    return replace(source.schema_contract, **override.schema_contract) if override else source.schema_contract
