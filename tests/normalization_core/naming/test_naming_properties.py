"""Properties every convention must keep: legal, bounded, idempotent, deterministic, collision-free."""
from __future__ import annotations

import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from normalization_core.naming import AirbyteNaming, NamingConvention, assign_names
from normalization_core.naming.base import is_safe_table_name
from normalization_core.naming.conventions import get_convention, system_names

SNAKE_LEGAL = re.compile(r"^[a-z_][a-z0-9_]*$")
AIRBYTE_LEGAL = re.compile(r"^[a-z0-9_]+$")
HOSTILE = [
    "", " ", "\t\n", "_", "__", "____", "../x", "..", "/", "a.b", "a/b", "a; DROP TABLE x", "x'); --",
    "\x00", "🚀", "👩‍👩‍👧", "日本語", "Ünïcödé", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "٣٤", "a٣", "ＡＢＣ", "İstanbul", "K", "ǅ", "ß",
    "\u202eevil", "e\u0301", "\U00011d3a", "\u0301\u0301", "1", "123", "-", "+", "@|*", "CamelCaseKey",
    "HTTPResponseCode", "a__b", "a____b", "__a__", "_a___b__C___D", "x" * 10_000, "Ab_" * 3_334, "日" * 10_000,
    "a__" * 3_000,
]
LENGTHS = [8, 16, 63, 255]
keys = st.one_of(
    st.text(max_size=300),
    st.lists(st.sampled_from(list("aAbB_ -.+1é文🚀") + ["__"]), max_size=40).map("".join),
)


def _conventions() -> list[NamingConvention]:
    snake = [get_convention(name, max_identifier_length=n) for name in ("native", "dlt") for n in LENGTHS]
    return snake + [get_convention("airbyte"), get_convention("airbyte", max_identifier_length=255)]


CONVENTIONS = _conventions()


def _limit(conv: NamingConvention) -> int:
    return conv.usable_length if isinstance(conv, AirbyteNaming) else conv.max_identifier_length


def _assert_legal(conv: NamingConvention, name: str) -> None:
    legal = AIRBYTE_LEGAL if isinstance(conv, AirbyteNaming) else SNAKE_LEGAL
    assert legal.match(name), f"{conv!r} produced illegal {name!r}"
    assert len(name) <= _limit(conv), f"{conv!r} produced {len(name)} characters: {name!r}"


def _check_name(conv: NamingConvention, key: str) -> None:
    for normalize in (conv.normalize_identifier, conv.normalize_table_name, conv.normalize_path):
        name = normalize(key)
        _assert_legal(conv, name)
        assert normalize(name) == name, f"{conv!r}: {normalize.__name__} not idempotent on {key!r} -> {name!r}"
    assert conv.shorten(conv.shorten(key)) == conv.shorten(key)


def _check_child(conv: NamingConvention, parent: str, keys_: tuple[str, ...]) -> None:
    table = conv.child_table_name(conv.normalize_table_name(parent), keys_)
    _assert_legal(conv, table)
    if not isinstance(conv, AirbyteNaming):
        assert conv.normalize_path(table) == table


@pytest.mark.parametrize("conv", CONVENTIONS, ids=repr)
@pytest.mark.parametrize("key", HOSTILE, ids=lambda k: repr(k[:20]) + (f"*{len(k)}" if len(k) > 20 else ""))
def test_hostile_keys(conv: NamingConvention, key: str) -> None:
    _check_name(conv, key)
    _check_child(conv, key, (key, "child"))


@pytest.mark.parametrize("conv", CONVENTIONS, ids=repr)
@settings(max_examples=150, deadline=None)
@given(key=keys)
def test_any_key(conv: NamingConvention, key: str) -> None:
    _check_name(conv, key)


@pytest.mark.parametrize("conv", CONVENTIONS, ids=repr)
@settings(max_examples=75, deadline=None)
@given(parent=keys, path=st.lists(keys, min_size=1, max_size=4))
def test_any_child_table(conv: NamingConvention, parent: str, path: list[str]) -> None:
    _check_child(conv, parent, tuple(path))


@pytest.mark.parametrize("name", ["native", "dlt", "airbyte"])
def test_deterministic_across_instances(name: str) -> None:
    first, second = get_convention(name), get_convention(name)
    for key in HOSTILE:
        assert first.normalize_path(key) == second.normalize_path(key)
        assert first.child_table_name("t", (key,)) == second.child_table_name("t", (key,))


def _check_assignment(conv: NamingConvention, originals: list[str], seed: int) -> None:
    result = assign_names(conv, originals)
    names = [name.lower() for name in result.mapping.values()]
    assert len(names) == len(set(names)), f"{conv!r}: duplicate names in {result.mapping}"
    assert set(result.mapping) == set(originals)
    for original, name in result.mapping.items():
        _assert_legal(conv, name)
        assert conv.normalize_path(name) == name
        if name != conv.normalize_path(original):
            assert any(original in c.originals for c in result.collisions), f"{original!r} unreported"
    shuffled = list(originals)
    random.Random(seed).shuffle(shuffled)
    assert assign_names(conv, shuffled) == result


@pytest.mark.parametrize("conv", CONVENTIONS, ids=repr)
@settings(max_examples=75, deadline=None)
@given(originals=st.lists(keys, max_size=25), seed=st.integers(0, 1000))
def test_assignment_is_unique_and_order_independent(conv: NamingConvention, originals: list[str], seed: int) -> None:
    _check_assignment(conv, originals, seed)


@pytest.mark.parametrize("conv", CONVENTIONS, ids=repr)
def test_assignment_of_hostile_keys(conv: NamingConvention) -> None:
    variants = [v for key in HOSTILE for v in (key, key.upper(), key.lower(), f" {key}")]
    _check_assignment(conv, variants, seed=7)


@pytest.mark.parametrize("name", ["native", "dlt", "airbyte"])
def test_many_keys_that_all_collide(name: str) -> None:
    conv = get_convention(name)
    # 256 keys that differ only in " " vs "." between the letters: all normalize to a_b_c_d_e_f_g_h_i
    originals = ["a" + "".join((" " if bit == "1" else ".") + c for c, bit in zip("bcdefghi", f"{i:08b}"))
                 for i in range(256)]
    result = assign_names(conv, originals)
    assert len({name.lower() for name in result.mapping.values()}) == 256
    assert [c.name for c in result.collisions] == ["a_b_c_d_e_f_g_h_i"]
    assert len(result.collisions[0].originals) == 256


def _table_names(name: str, stream: str, path: tuple[str, ...]) -> list[str]:
    """Root, child, raw and history table names of a stream under a convention."""
    conv, names = get_convention(name), system_names(name)
    root = conv.normalize_table_name(stream)
    raw = conv.raw_table_name(stream) if isinstance(conv, AirbyteNaming) else names.raw_table(root)
    return [root, conv.child_table_name(root, path), raw, names.history_table(root)]


@pytest.mark.parametrize("name", ["native", "dlt", "airbyte", "direct"])
def test_every_table_name_of_a_hostile_stream_needs_no_quoting(name: str) -> None:
    for stream in HOSTILE:
        for table in _table_names(name, stream, (stream, "child")):
            assert is_safe_table_name(table), (name, stream, table)


@pytest.mark.parametrize("name", ["native", "dlt", "airbyte", "direct"])
@settings(max_examples=100, deadline=None)
@given(stream=keys, path=st.lists(keys, min_size=1, max_size=3))
def test_every_table_name_of_any_stream_needs_no_quoting(name: str, stream: str, path: list[str]) -> None:
    for table in _table_names(name, stream, tuple(path)):
        assert is_safe_table_name(table), (name, stream, table)
