"""assign_names: unique names, reported collisions, stable existing names (SPEC §4)."""
from __future__ import annotations

from typing import Any

import pytest

from normalization_core.naming import NameCollision, assign_names

from normalization_core.naming.conventions import get_convention
from normalization_core.naming.base import compute_tag


@pytest.mark.cases("collisions.json")
def test_assign_names(case: dict[str, Any]) -> None:
    result = assign_names(get_convention(case["convention"]), case["originals"])
    assert result.mapping == case["expected"]


def test_case_only_differences_collide_and_are_reported() -> None:
    result = assign_names(get_convention("native"), ["foo", "Foo"])
    assert result.mapping == {"Foo": "foo", "foo": "foo_" + compute_tag("foo")}
    assert result.collisions == [
        NameCollision(name="foo", originals=("Foo", "foo"), resolved={"Foo": "foo", "foo": "foo_be6vyw"})]


def test_no_collision_no_report() -> None:
    result = assign_names(get_convention("dlt"), ["a", "b", "Customer Id"])
    assert result.mapping == {"a": "a", "b": "b", "Customer Id": "customer_id"}
    assert result.collisions == []


def test_existing_names_never_change() -> None:
    conv = get_convention("native")
    result = assign_names(conv, ["Foo", "foo", "bar"], existing={"foo": "foo"})
    assert result.mapping == {"foo": "foo", "Foo": "foo_" + compute_tag("Foo"), "bar": "bar"}
    assert result.collisions == [NameCollision(
        name="foo", originals=("foo", "Foo"), resolved={"foo": "foo", "Foo": "foo_atbnow"})]


def test_existing_name_that_is_not_plain_is_kept_and_blocks_its_name() -> None:
    conv = get_convention("airbyte")
    result = assign_names(conv, ["x_1", "X"], existing={"x": "x", "x ": "x_1"})
    assert result.mapping == {"x": "x", "x ": "x_1", "X": "x_2", "x_1": "x_1_1"}
    assert [c.name for c in result.collisions] == ["x", "x_1"]


def test_existing_names_must_be_unique() -> None:
    with pytest.raises(ValueError, match="not unique"):
        assign_names(get_convention("native"), ["a"], existing={"A": "a", "a ": "A"})


def test_suffix_that_is_taken_moves_on() -> None:
    result = assign_names(get_convention("airbyte"), ["a", "A", "a_1"])
    # sorted: "A" -> a, "a" -> a_1, then "a_1" finds its plain name taken
    assert result.mapping == {"A": "a", "a": "a_1", "a_1": "a_1_1"}
    assert result.collisions[1] == NameCollision(
        name="a_1", originals=("a", "a_1"), resolved={"a": "a_1", "a_1": "a_1_1"})


def test_tag_that_is_taken_moves_on() -> None:
    conv = get_convention("native")
    taken = "foo_" + compute_tag("Foo")
    result = assign_names(conv, ["Foo"], existing={"foo": "foo", "other": taken})
    assert result.mapping["Foo"] == "foo_" + compute_tag("Foo#1")


def test_tagged_name_fits_the_maximum_length() -> None:
    conv = get_convention("native", max_identifier_length=10)
    result = assign_names(conv, ["abcdefghij", "ABCDEFGHIJ"])
    assert result.mapping == {"ABCDEFGHIJ": "abcdefghij", "abcdefghij": "abc_" + compute_tag("abcdefghij")}
    assert all(len(name) <= 10 for name in result.mapping.values())


def test_cut_before_the_tag_does_not_form_a_path_separator() -> None:
    conv = get_convention("native", max_identifier_length=10)  # keeps 3 characters: "ab_", not "ab__"
    result = assign_names(conv, ["ab__cdefgh", "AB__cdefgh"])
    assert result.mapping["ab__cdefgh"] == "ab_" + compute_tag("ab__cdefgh")


def test_table_names_use_the_given_normalizer() -> None:
    conv = get_convention("native")
    result = assign_names(conv, ["a__b", "A B"], normalize=conv.normalize_table_name)
    assert result.mapping == {"A B": "a_b", "a__b": "a_b_" + compute_tag("a__b")}


def test_duplicate_originals_get_one_name() -> None:
    result = assign_names(get_convention("dlt"), ["a", "a"])
    assert result.mapping == {"a": "a"}
    assert result.collisions == []
