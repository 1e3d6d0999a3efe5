"""Inferred schema documents (SPEC §5.2, §5.3): from (path, kind) pairs, order-free, evolution only adds."""
from __future__ import annotations

import copy
import random

from normalization_core.schema import schema_hash
from normalization_core.schema.column_types import EPOCH_FAR, Steering
from normalization_core.schema.inference import evolve, infer_schema


def steps(*keys: str) -> tuple[str, ...]:
    return tuple(k if k == "[]" else f"k:{k}" for k in keys)


def columns(schema, table: str | None = None) -> list[tuple[str, str]]:
    t = next(t for t in schema["tables"] if t["name"] == (table or schema["stream"]))
    return [(c["name"], c["data_type"]) for c in t["columns"]]


FIRST = {((), "object"), (steps("id"), "bigint"), (steps("n"), "bigint"), (steps("o"), "object"),
         (steps("o", "a"), "text"), (steps("items"), "array"), (steps("items", "[]"), "object"),
         (steps("items", "[]", "q"), "bigint")}


def test_the_same_set_in_any_order_gives_the_same_document():
    pairs = sorted(FIRST | {(steps("id"), "text"), (steps("n"), "double")})
    reference = infer_schema("s", pairs)
    for seed in range(5):
        shuffled = random.Random(seed).sample(pairs, len(pairs))
        assert infer_schema("s", shuffled) == reference
        assert schema_hash(infer_schema("s", shuffled)) == schema_hash(reference)
    assert columns(reference) == [("id", "bigint"), ("id__v_text", "string"), ("n", "double"), ("o__a", "string")]


def test_dates_are_text_unless_iso_date_detection_is_on():
    pairs = {(steps("d"), "date"), (steps("t"), "timestamp")}
    assert columns(infer_schema("s", pairs)) == [("d", "string"), ("t", "timestamp")]
    assert columns(infer_schema("s", pairs, steering=Steering(detections=("iso_timestamp", "iso_date")))) == [
        ("d", "date"), ("t", "timestamp")]
    assert columns(infer_schema("s", pairs, steering=Steering(detections=()))) == [("d", "string"), ("t", "string")]


def test_data_type_hints_choose_the_main_type_of_root_columns_by_their_normalized_name():
    pairs = {(steps("Amount"), "bigint"), (steps("code"), "bigint"), (steps("when"), "timestamp"),
             (steps("tags"), "object"), (steps("tags", "a"), "bigint"), (steps("o"), "object"), (steps("o", "x"), "bigint")}
    hints = Steering(data_types={"amount": "double", "code": "text", "when": "text", "tags": "json", "x": "text"})
    assert columns(infer_schema("s", pairs, "dlt", steering=hints)) == [
        ("amount", "double"), ("code", "string"), ("o__x", "bigint"), ("tags", "string"), ("when", "string")]
    assert columns(infer_schema("s", {(steps("code"), "text")}, steering=Steering(data_types={"code": "bigint"}))) == [
        ("code", "bigint"), ("code__v_text", "string")]


def test_preferred_types_type_new_columns_of_every_table_by_name_or_regex_after_hints():
    pairs = FIRST | {(steps("created_at"), "timestamp"), (steps("items", "[]", "amount_x"), "bigint")}
    steering = Steering(preferred_types=(("re:^amount", "double"), ("re:_at$", "text"), ("Id", "text")),
                        data_types={"id": "decimal"})
    schema = infer_schema("s", pairs, steering=steering)
    assert columns(schema) == [("created_at", "string"), ("id", "decimal(38,0)"), ("n", "bigint"), ("o__a", "string")]
    assert columns(schema, "s__items") == [("amount_x", "double"), ("q", "bigint")]
    later = evolve(schema, {(steps("n"), "bigint"), (steps("amount"), "bigint")}, steering)
    assert columns(later)[-1] == ("amount", "double")
    assert columns(evolve(schema, {(steps("created_at"), "timestamp")}))[0] == ("created_at", "string")


def test_evolution_adds_columns_and_tables_and_never_retypes_or_renames():
    first = infer_schema("s", FIRST)
    later = {(steps("id"), "double"), (steps("n"), "text"), (steps("new"), "bool"),
             (steps("o", "b"), "timestamp"), (steps("items", "[]", "q"), "text"),
             (steps("tags"), "array"), (steps("tags", "[]"), "text"), (steps("o"), "text")}
    evolved = evolve(first, later)
    assert columns(evolved) == [("id", "bigint"), ("id__v_double", "double"), ("n", "bigint"),
                                ("n__v_text", "string"), ("o", "string"), ("o__a", "string"),
                                ("o__b", "timestamp"), ("new", "boolean")]  # a scalar `o` gets its column (dlt)
    assert columns(evolved, "s__items") == [("q", "bigint"), ("q__v_text", "string")]
    assert columns(evolved, "s__tags") == [("value", "string")]
    assert [t["name"] for t in evolved["tables"]] == ["s", "s__items", "s__tags"]
    for table in first["tables"]:  # every earlier column is still there with its name and type
        evolved_table = next(t for t in evolved["tables"] if t["name"] == table["name"])
        assert all(c in evolved_table["columns"] for c in table["columns"])


def test_evolving_with_nothing_new_changes_nothing():
    first = infer_schema("s", FIRST | {(steps("id"), "text")})
    assert evolve(first, FIRST) == first
    assert evolve(first, set()) == first
    assert schema_hash(evolve(evolve(first, {(steps("x"), "bigint")}), set())) == schema_hash(
        evolve(first, {(steps("x"), "bigint")}))


def test_a_previous_json_column_stays_json_and_a_previous_scalar_gets_flattened_columns_and_a_table():
    first = infer_schema("s", {(steps("l"), "array"), (steps("l", "[]"), "object"), (steps("l", "[]", "x"), "bigint"),
                               (steps("l", "[]"), "text"), (steps("v"), "bigint")})
    assert columns(first) == [("v", "bigint")] and columns(first, "s__l") == [("value", "string")]
    evolved = evolve(first, {(steps("l"), "array"), (steps("l", "[]"), "object"), (steps("l", "[]", "y"), "bigint"),
                             (steps("v"), "object"), (steps("v", "z"), "bigint"), (steps("v"), "array"),
                             (steps("v", "[]"), "bool")})
    assert columns(evolved) == [("v", "bigint"), ("v__z", "bigint")]
    assert columns(evolved, "s__l") == [("value", "string")] and columns(evolved, "s__v") == [("value", "boolean")]


def test_a_key_of_several_kinds_places_each_kind_in_any_order():
    """dlt: the scalar in the column, the object's fields flattened, the array in a child table."""
    pairs = [(steps("k"), "text"), (steps("k"), "array"), (steps("k", "[]"), "bigint"), (steps("k"), "object"),
             (steps("k", "x"), "double")]
    reference = infer_schema("s", pairs)
    for seed in range(5):
        assert infer_schema("s", random.Random(seed).sample(pairs, len(pairs))) == reference
    assert columns(reference) == [("k", "string"), ("k__x", "double")]
    assert columns(reference, "s__k") == [("value", "bigint")]
    assert evolve(infer_schema("s", pairs[:1]), pairs[1:]) == evolve(infer_schema("s", pairs[1:]), pairs[:1])


def test_dlt_convention_and_name_shortening_apply_to_variant_columns():
    schema = infer_schema("Things", {(steps("someId"), "bigint"), (steps("someId"), "text")}, convention="dlt",
                          max_identifier_length=10)
    names = [name for name, _ in columns(schema, schema["tables"][0]["name"])]
    assert names[0] == "some_id" and len(names) == 2 and all(len(n) <= 10 for n in names)


def test_inferred_airbyte_keys_are_named_after_the_stream_or_field_within_63_characters():
    stream = "nested_stream_with_complex_columns_resulting_into_long_names"
    pairs = {((), "object"), (steps("partition"), "array"), (steps("partition", "[]"), "object"),
             (steps("partition", "[]", "currency"), "text"), (steps("partition", "[]", "partition"), "array"),
             (steps("partition", "[]", "partition", "[]"), "object"),
             (steps("partition", "[]", "partition", "[]", "x"), "bigint")}
    schema = infer_schema(stream, pairs, "airbyte")
    keys = {t["name"]: (t["row_key"], t.get("parent_key")) for t in schema["tables"]}
    root, child, grandchild = (t["name"] for t in schema["tables"])
    assert keys[root] == ("_airbyte_nested_stre__nto_long_names_hashid", None)
    assert keys[child] == ("_airbyte_partition_hashid", "_airbyte_nested_stre__nto_long_names_foreign_hashid")
    assert keys[grandchild] == ("_airbyte_partition_3_hashid", "_airbyte_partition_foreign_hashid")
    assert max(len(name) for pair in keys.values() for name in pair if name) <= 63
    assert evolve(schema, pairs | {(steps("y"), "text")})["tables"][1]["row_key"] == "_airbyte_partition_hashid"


def test_timestamp_detection_types_numbers_near_their_records_time_as_epoch_seconds():
    steering = Steering(detections=("iso_timestamp", "timestamp"))
    observed = {((), "object"), (("k:paid",), "bigint"), (("k:paid",), "double"),
                (("k:views",), "bigint"), (("k:views",), EPOCH_FAR)}
    types = {c["name"]: c["logical_type"] for c in infer_schema("s", observed, "dlt", steering=steering)["tables"][0]["columns"]}
    assert types == {"paid": "timestamp", "views": "bigint"}
    assert {c["logical_type"] for c in infer_schema("s", observed, "dlt")["tables"][0]["columns"]} == {"double", "bigint"}
    first = infer_schema("s", observed, "dlt", steering=steering)
    later = evolve(first, {(("k:paid",), "bigint"), (("k:paid",), EPOCH_FAR)}, steering)
    assert later == first  # a far number later goes into the epoch column, as dlt coerces it


def test_airbyte_suffixes_an_inferred_colliding_key_as_written():
    pairs = {(steps("id"), "bigint"), (steps("ID"), "bigint"), (steps("a"), "object"), (steps("a", "B"), "bigint"),
             (steps("a_b"), "text"), (steps("n"), "bigint"), (steps("n"), "text"), (steps("n_v_text"), "bigint")}
    schema = infer_schema("s", pairs, "airbyte")
    # keys sorted (`ID` < `a` < `a_b` < `id`); a key written as its name keeps it, a variant finds its name taken
    assert columns(schema) == [("id_1", "bigint"), ("a_b_1", "bigint"), ("a_b", "string"), ("id", "bigint"),
                               ("n", "bigint"), ("n_v_text_1", "string"), ("n_v_text", "bigint")]
    assert {c["name"]: sorted(c["resolved"].values()) for c in schema["collisions"]} == {
        "a_b": ["a_b", "a_b_1"], "id": ["id", "id_1"]}
    assert {c["name"]: c["resolved"] for c in schema["collisions"]}["id"] == {'["id"]': "id", '["ID"]': "id_1"}


def test_a_table_name_no_catalog_takes_moves_when_the_stream_evolves_its_columns_keep_their_names():
    pairs = {(steps("id"), "bigint"), (steps("Items"), "array"), (steps("Items", "[]"), "object"),
             (steps("Items", "[]", "SKU"), "text"), (steps("Items", "[]", "sku"), "text")}
    first = infer_schema("Orders", pairs, "direct")
    assert [t["name"] for t in first["tables"]] == ["Orders", "Orders__Items"]
    older = copy.deepcopy(first)  # as `direct` named child tables before: dlt's `▶`, which no catalog takes
    older["tables"][1]["name"] = "Orders▶Items"
    older["tables"][1]["columns"][1]["name"] = "sku_older"
    later = evolve(older, pairs | {(steps("Items", "[]", "n"), "bigint")})
    assert [t["name"] for t in later["tables"]] == ["Orders", "Orders__Items"]
    assert columns(later, "Orders__Items") == [("SKU", "string"), ("sku_older", "string"), ("n", "bigint")]
