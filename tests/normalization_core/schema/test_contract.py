"""Schema changes a contract governs (SPEC §5.4): new tables, new columns, new variant columns."""
from __future__ import annotations

import pytest

from normalization_core.configuration.config import SchemaContract
from normalization_core.errors import ContractViolation
from normalization_core.schema.contract import apply_contract, check_contract, schema_changes
from normalization_core.schema.inference import evolve, infer_schema

FIRST = {((), "object"), (("k:id",), "bigint")}
LATER = {(("k:id",), "text"), (("k:name",), "text"), (("k:items",), "array"), (("k:items", "[]"), "bigint")}


def test_each_kind_of_change_is_named_with_its_entity():
    first = infer_schema("s", FIRST, "dlt")
    assert [e for e, _ in schema_changes(None, first)] == ["tables"]
    assert sorted(schema_changes(first, evolve(first, LATER))) == [
        ("columns", "add column 'name' to table 's'"),
        ("data_type", "add variant column 'id__v_text' to 's' for values that are not 'id''s type"),
        ("tables", "add table 's__items'")]
    assert list(schema_changes(first, evolve(first, FIRST))) == []


@pytest.mark.parametrize("entity", ["tables", "columns", "data_type"])
def test_freezing_one_entity_refuses_only_its_changes(entity):
    first = infer_schema("s", FIRST, "dlt")
    later = evolve(first, {(("k:name",), "text")} if entity == "columns" else
                   {(("k:id",), "text")} if entity == "data_type" else {(("k:xs",), "array"), (("k:xs", "[]"), "bigint")})
    with pytest.raises(ContractViolation) as err:
        check_contract("src", "s", SchemaContract(**{entity: "freeze"}), first, later)
    assert err.value.entity == entity and f"schema_contract.{entity} to 'evolve'" in str(err.value)
    others = [e for e in ("tables", "columns", "data_type") if e != entity]
    check_contract("src", "s", SchemaContract(**{e: "freeze" for e in others}), first, later)


def test_discarding_keeps_the_stored_schema_and_says_what_the_load_leaves_out():
    first = infer_schema("s", FIRST, "dlt")
    later = evolve(first, LATER)
    contract = SchemaContract(tables="discard_value", columns="discard_row", data_type="discard_value")
    kept, discards = apply_contract("src", "s", contract, first, later)

    assert kept == first
    assert discards.tables == {"s__items"}
    assert discards.rows == {"s": ("name",)} and discards.values == {"s": ("id__v_text",)}


def test_a_variant_of_a_discarded_new_column_goes_with_it():
    first = infer_schema("s", FIRST, "dlt")
    later = evolve(first, {(("k:name",), "text"), (("k:name",), "bool")})
    contract = SchemaContract(columns="discard_value", data_type="freeze")
    kept, discards = apply_contract("src", "s", contract, first, later)
    assert kept == first and discards.values == {"s": ("name", "name__v_text")} and not discards.rows
    assert apply_contract("src", "s", SchemaContract(data_type="discard_row"), first, later)[1].rows == {
        "s": ("name__v_text",)}


def test_a_new_stream_under_a_discarding_tables_contract_keeps_no_table():
    later = evolve(infer_schema("s", FIRST, "dlt"), LATER)
    kept, discards = apply_contract("src", "s", SchemaContract(tables="discard_row"), None, later)
    assert kept["tables"] == [] and discards.tables == {"s", "s__items"}
