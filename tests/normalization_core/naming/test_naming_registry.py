"""get_convention: short names, plug-ins by path, clear errors."""
from __future__ import annotations

import pytest

from normalization_core.naming import (
    AirbyteNaming,
    DirectNaming,
    DltNaming,
    NamingConvention,
    SnakeCaseNaming,
)
from normalization_core.naming.conventions import get_convention


class UpperNaming(NamingConvention):
    """A plug-in used by the tests: upper-case, spaces to `_`."""

    name = "upper"

    def normalize_identifier(self, identifier: str) -> str:
        return self.shorten(identifier.strip().replace(" ", "_").upper() or "_EMPTY")


@pytest.mark.parametrize(("reference", "cls", "length"), [
    ("native", SnakeCaseNaming, 255),
    ("dlt", DltNaming, 255),
    ("airbyte", AirbyteNaming, 63),
    ("direct", DirectNaming, 255),
])
def test_short_names(reference: str, cls: type[NamingConvention], length: int) -> None:
    conv = get_convention(reference)
    assert type(conv) is cls
    assert conv.name == reference
    assert conv.max_identifier_length == length


def test_explicit_length() -> None:
    assert get_convention("dlt", max_identifier_length=63).max_identifier_length == 63


@pytest.mark.parametrize("reference", [
    f"{__name__}:UpperNaming",
    f"{__name__}.UpperNaming",
    "normalization_core.naming.snake_case:DltNaming",
])
def test_plugin_by_path(reference: str) -> None:
    conv = get_convention(reference, max_identifier_length=20)
    assert isinstance(conv, NamingConvention)
    assert conv.max_identifier_length == 20


def test_plugin_gets_shared_behaviour() -> None:
    conv = get_convention(UpperNaming)
    assert conv.normalize_identifier("order items") == "ORDER_ITEMS"
    assert conv.child_table_name("ORDERS", ("line items",)) == "ORDERS__LINE_ITEMS"
    assert conv.make_path("A", "", "B") == "A__B"


@pytest.mark.parametrize(("reference", "why"), [
    ("snake_case", "not a known name"),
    ("", "not a known name"),
    ("no_such_module:Naming", "cannot be imported"),
    ("normalization_core.naming:NoSuchClass", "cannot be imported"),
    ("normalization_core.naming.base:compute_tag", "is not a NamingConvention subclass"),
    ("normalization_core.naming:NamingConvention", "is abstract"),
])
def test_unknown_convention(reference: str, why: str) -> None:
    with pytest.raises(ValueError) as info:
        get_convention(reference)
    message = str(info.value)
    assert why in message
    assert "native, dlt, airbyte" in message
    assert "\n" not in message


@pytest.mark.parametrize(("reference", "length"), [("native", 7), ("dlt", 0), ("airbyte", 39)])
def test_too_short_length(reference: str, length: int) -> None:
    with pytest.raises(ValueError, match="max_identifier_length must be an integer"):
        get_convention(reference, max_identifier_length=length)
