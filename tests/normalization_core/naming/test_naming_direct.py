"""dlt's `direct` convention (SPEC §4.4), checked against the installed dlt's own `direct` naming."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from normalization_core.naming import DirectNaming
from normalization_core.naming.base import is_safe_table_name

from normalization_core.naming.conventions import get_convention

dlt_direct = pytest.importorskip("dlt.common.normalizers.naming.direct")
CASES = json.loads((Path(__file__).parents[2] / "cases/naming/direct.json").read_text(encoding="utf-8"))
DLT = dlt_direct.NamingConvention()


@pytest.fixture
def direct() -> DirectNaming:
    return get_convention("direct")


@pytest.mark.parametrize("key", CASES["same_as_dlt"])
def test_names_are_dlts(direct: DirectNaming, key: str) -> None:
    assert direct.normalize_identifier(key) == DLT.normalize_identifier(key)
    assert direct.normalize_path(key) == DLT.normalize_path(key)


@pytest.mark.parametrize("keys", [("customer", "Address"), ("Line Items", "sku"), ("a▶b", "c")])
def test_nesting_joins_column_levels_with_dlts_separator_and_table_levels_with_underscores(
        direct: DirectNaming, keys: tuple[str, ...]) -> None:
    parts = [part.replace(" ", "_") for part in keys]  # spaces: see test_characters_delta_refuses...
    assert direct.make_path(*(direct.normalize_path(k) for k in keys)) == DLT.make_path(
        *(DLT.normalize_path(k) for k in parts))
    dlts = DLT.normalize_tables_path(DLT.make_path("Orders", *parts))
    assert direct.child_table_name("Orders", keys) == dlts.replace("▶", "__")  # a catalog refuses `▶`


@pytest.mark.parametrize("case", CASES["delta"], ids=lambda c: c["input"])
def test_characters_delta_refuses_in_column_names_become_underscores(direct: DirectNaming, case: dict) -> None:
    assert direct.normalize_path(case["input"]) == case["expected"] != DLT.normalize_path(case["input"])


@pytest.mark.parametrize("case", CASES["folders"], ids=lambda c: c["input"])
def test_table_names_are_one_folder_no_shell_or_catalog_needs_quoted(direct: DirectNaming, case: dict) -> None:
    assert direct.normalize_table_name(case["input"]) == case["expected"]
    assert direct.child_table_name(case["expected"], ("../y",)) == f"{case['expected']}_____y"
    assert direct.child_table_name(case["expected"], ("Straße", "x`y")) == f"{case['expected']}__Stra_e__x_y"


def test_long_names_are_shortened_with_dlts_tag() -> None:
    key = "K" * 300
    assert get_convention("direct", 64).normalize_identifier(key) == dlt_direct.NamingConvention(64).normalize_identifier(key)


@pytest.mark.parametrize("length", [8, 64, 255])
def test_names_are_idempotent_bounded_and_delta_legal(length: int) -> None:
    from tests.normalization_core.naming.test_naming_properties import HOSTILE

    direct = get_convention("direct", length)
    for key in HOSTILE:
        for normalize in (direct.normalize_identifier, direct.normalize_table_name, direct.normalize_path):
            name = normalize(key)
            assert normalize(name) == name and 0 < len(name) <= length, (key, name)
            assert not set(name) & set(" ,;{}()\n\t="), (key, name)
        for table in (direct.normalize_table_name(key), direct.child_table_name("t", (key, key))):
            assert is_safe_table_name(table), (key, table)
