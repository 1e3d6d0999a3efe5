"""native and dlt conventions against dlt's golden vectors (dlt.md §1, SPEC §4.1)."""
from __future__ import annotations

from typing import Any

import pytest

from normalization_core.naming.base import compute_tag, shorten_with_tag, trim_and_tag
from normalization_core.naming.conventions import get_convention
from normalization_core.naming.snake_case import break_path, shorten_path

SNAKE_CASE = ["native", "dlt"]


@pytest.mark.parametrize("convention", SNAKE_CASE)
@pytest.mark.cases("snake_case_identifier.json")
def test_normalize_identifier(convention: str, case: dict[str, Any]) -> None:
    assert get_convention(convention).normalize_identifier(case["input"]) == case["expected"]


@pytest.mark.parametrize("convention", SNAKE_CASE)
@pytest.mark.cases("snake_case_identifier.json")
def test_normalize_table_name_is_identifier(convention: str, case: dict[str, Any]) -> None:
    assert get_convention(convention).normalize_table_name(case["input"]) == case["expected"]


@pytest.mark.parametrize("convention", SNAKE_CASE)
@pytest.mark.cases("snake_case_path.json")
def test_normalize_path(convention: str, case: dict[str, Any]) -> None:
    assert get_convention(convention).normalize_path(case["input"]) == case["expected"]


@pytest.mark.cases("snake_case_break_path.json", source="dlt-hub/dlt tests/common/normalizers/test_naming.py")
def test_break_and_make_path(case: dict[str, Any]) -> None:
    if "make_path" in case:
        assert get_convention("dlt").make_path(*case["make_path"]) == case["expected"]
    else:
        assert break_path(case["input"]) == case["expected"]


@pytest.mark.cases("shorten_tags.json")
def test_compute_tag(case: dict[str, Any]) -> None:
    assert compute_tag(case["input"]) == case["expected"]


@pytest.mark.cases("snake_case_shorten.json", function="trim_and_tag")
def test_trim_and_tag(case: dict[str, Any]) -> None:
    assert trim_and_tag(case["input"], case["tag"], case["max_length"]) == case["expected"]


def test_trim_and_tag_rejects_a_tag_longer_than_the_limit() -> None:
    with pytest.raises(ValueError, match="does not fit"):
        trim_and_tag("xDLTHUBx", "123456", 5)


@pytest.mark.cases("snake_case_shorten.json", function="shorten_with_tag")
def test_shorten_with_tag(case: dict[str, Any]) -> None:
    assert shorten_with_tag(case["input"], case["tag_source"], case["max_length"]) == case["expected"]


@pytest.mark.cases("snake_case_shorten.json", function="normalize_path")
def test_normalize_path_shortened(case: dict[str, Any]) -> None:
    naming = get_convention("dlt", max_identifier_length=case["max_length"])
    assert naming.normalize_path(case["input"]) == case["expected"]


@pytest.mark.cases("snake_case_shorten.json", function="normalize_identifier")
def test_normalize_identifier_shortened(case: dict[str, Any]) -> None:
    naming = get_convention("dlt", max_identifier_length=case["max_length"])
    assert naming.normalize_identifier(case["input"]) == case["expected"]


def test_identifier_tag_comes_from_the_stripped_raw_name() -> None:
    naming = get_convention("native", max_identifier_length=10)
    raw = ".\n'played CELLO🚧_"
    # "_played_cellox" keeps 2 + 2 characters around the tag
    assert naming.normalize_identifier(raw) == "_p" + compute_tag(raw) + "xx" == "_pvrhqfwxx"
    assert naming.normalize_identifier(f"  {raw} \t\n") == naming.normalize_identifier(raw)


def test_path_tag_comes_from_the_raw_path() -> None:
    naming = get_convention("native", max_identifier_length=20)
    path = "Customer Info__Billing Address__Postal Code"
    # "customer_info__billing_address__postal_code" keeps 7 + 7 characters around the tag
    assert naming.normalize_path(path) == "custome" + compute_tag(path) + "al_code" == "customesar2maal_code"


def test_shorten_takes_the_tag_from_the_name_itself() -> None:
    naming = get_convention("dlt", max_identifier_length=16)
    name = "orders__customer__addresses"
    assert naming.shorten(name) == "order" + compute_tag(name) + "esses" == "orderp5ophqesses"
    assert naming.shorten("orders") == "orders"


def test_shorten_path_glues_the_tag_when_dlt_would_regroup_parts() -> None:
    assert compute_tag("seed5") == "1v4blw"
    # dlt: "a__1v4blwbbb", whose part "1v4blwbbb" re-normalizes to "_1v4blwbbb"
    assert shorten_path("a__bbbbbbbbbbbbbbbbbbbbbbbb", "seed5", 12) == "axx1v4blwbbb"
    # dlt: "_empt" + tag + "__000", where the cut turned the part "_000" into "000"
    path = "_empty___empty___000"
    assert shorten_path(path, path, 16) == "_empt" + compute_tag(path) + "xx000" == "_emptjm93iqxx000"
    # a cut that leaves the parts as they are is dlt's
    assert shorten_path("a__bbbbbbbbbbbbbbbbbbbbbbbb", "seed0", 12) == "a__f3ipgwbbb"


@pytest.mark.cases("snake_case_nested.json", kind="column")
def test_flattened_column_names(case: dict[str, Any]) -> None:
    naming = get_convention("dlt")
    assert naming.make_path(*(naming.normalize_path(key) for key in case["key_path"])) == case["expected"]


@pytest.mark.parametrize("convention", SNAKE_CASE)
@pytest.mark.cases("snake_case_nested.json", kind="table")
def test_child_table_name(convention: str, case: dict[str, Any]) -> None:
    naming = get_convention(convention)
    assert naming.child_table_name(case["parent"], tuple(case["key_path"])) == case["expected"]


def test_child_table_name_is_shortened_with_the_tag_of_the_full_name() -> None:
    naming = get_convention("native", max_identifier_length=20)
    full = "orders__customer__shipping_addresses"
    assert naming.child_table_name("orders", ("customer", "Shipping Addresses")) == (
        "orders_" + compute_tag(full) + "dresses") == "orders_i5j1qqdresses"


def test_long_path_stays_a_path_when_shortened() -> None:
    naming = get_convention("dlt", max_identifier_length=63)
    name = naming.normalize_path("Prospects External Data__Author Details__Educations" * 3)
    assert len(name) == 63
    assert naming.normalize_path(name) == name
