"""Hostile records for the property test (`test_hostile_input.py`): hypothesis strategies, exact JSON text, and the
scalars a record holds by key path.

A record is plain Python (dicts, lists, strings, booleans, None) with numbers as `Num`, which keeps the text a
producer wrote (`1e400`, a 40-digit integer) so that a value is compared with what lakenorm stored exactly.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

FRAGMENTS = json.loads((Path(__file__).parents[1] / "cases/hostile/fragments.json").read_text(encoding="ascii"))
MAX_DEPTH = 64
"""Deepest nesting drawn (SPEC §10: deep nesting)."""
BAD_BYTES = b"\xff\xfe\xc3("
"""Bytes that are not UTF-8 (a lone 0xff, 0xfe, and a lead byte followed by an ASCII byte)."""
_BAD_MARK = "\ue000bad\ue000"
_DATE_LIKE = re.compile(r"^\s*[+-]?\d{1,6}-\d")
"""Text that inference may type as a date or timestamp: kept out of drawn strings (their typed cell differs)."""


@dataclass(frozen=True)
class Num:
    """A JSON number as written."""

    text: str


Scalar = tuple[str, Any]
"""A comparable scalar: ("num", Decimal), ("str", text), ("bool", flag)."""


def scalar_of(value: Any) -> Scalar | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, Num):
        return ("num", Decimal(value.text))
    return ("str", value)


def to_json(value: Any, ascii_only: bool) -> str:
    """Exact JSON text; a string holding a lone surrogate is always written with `\\u` escapes."""
    if isinstance(value, Num):
        return value.text
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=ascii_only or _has_surrogate(value))
    if isinstance(value, dict):
        return "{" + ", ".join(f"{to_json(k, ascii_only)}: {to_json(v, ascii_only)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(to_json(v, ascii_only) for v in value) + "]"
    return json.dumps(value)


def line_bytes(record: dict[str, Any], ascii_only: bool) -> bytes:
    """The record's line as a producer writes it; the mark `_BAD_MARK` in a string becomes `BAD_BYTES`."""
    return to_json(record, ascii_only).encode("utf-8", "surrogatepass").replace(
        json.dumps(_BAD_MARK, ensure_ascii=False)[1:-1].encode(), BAD_BYTES).replace(
        json.dumps(_BAD_MARK)[1:-1].encode(), BAD_BYTES)


def _has_surrogate(text: str) -> bool:
    return any(0xD800 <= ord(c) <= 0xDFFF for c in text)


def leaves(value: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Scalar]]:
    """Every non-null scalar of a record with its key path (array positions left out, as changes name fields)."""
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in leaves(v, (*path, k))]
    if isinstance(value, list):
        return [leaf for v in value for leaf in leaves(v, path)]
    scalar = scalar_of(value)
    return [] if scalar is None else [(path, scalar)]


def holds_bad_bytes(value: Any) -> bool:
    if isinstance(value, dict):
        return any(holds_bad_bytes(v) for v in value.values())
    if isinstance(value, list):
        return any(holds_bad_bytes(v) for v in value)
    return isinstance(value, str) and _BAD_MARK in value


def cell_scalars(value: Any, json_text: bool) -> list[Scalar]:
    """The scalars a typed cell holds: a JSON text column's parsed values, a struct's fields, a list's items; a
    text that reads as a JSON number or boolean also counts as one (a catalog's `string` keeps a number's text)."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in cell_scalars(v, json_text)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in cell_scalars(v, json_text)]
    if hasattr(value, "asDict"):
        return [s for v in value.asDict().values() for s in cell_scalars(v, json_text)]
    if isinstance(value, bool):
        return [("bool", value)]
    if isinstance(value, (int, Decimal)):
        return [("num", Decimal(value))]
    if isinstance(value, float):
        return [("num", Decimal(repr(value)))] if value == value and abs(value) != float("inf") else []
    if not isinstance(value, str):
        return [("str", str(value))]
    found: list[Scalar] = [("str", value)]
    if json_text:
        try:
            parsed = json.loads(value, parse_float=Decimal, parse_int=Decimal)
        except ValueError:
            parsed = None
        found += _parsed_scalars(parsed)
    try:
        found.append(("num", Decimal(value.strip())))
    except InvalidOperation:
        pass
    if value in ("true", "false"):
        found.append(("bool", value == "true"))
    return found


def _parsed_scalars(value: Any) -> list[Scalar]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in _parsed_scalars(v)]
    if isinstance(value, list):
        return [s for v in value for s in _parsed_scalars(v)]
    if isinstance(value, bool):
        return [("bool", value)]
    if isinstance(value, Decimal):
        return [("num", value)]
    return [] if value is None else [("str", value)]


# --- strategies -------------------------------------------------------------------------------------------------

def _long_keys() -> st.SearchStrategy[str]:
    """Keys of ~300 characters that differ only in the middle: they truncate alike."""
    return st.tuples(st.sampled_from(FRAGMENTS["long_key_stems"]), st.integers(0, 9)).map(
        lambda s: s[0] * (150 // len(s[0])) + str(s[1]) + s[0] * (150 // len(s[0])))


ANY_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=12)
"""Any code points, control characters, NUL and lone surrogates included."""
KEYS = st.one_of(st.sampled_from(FRAGMENTS["keys"]), ANY_TEXT, _long_keys()).filter(lambda k: k != "id")
STRINGS = st.one_of(ANY_TEXT, st.sampled_from(["\ud800", "x\udfffy", "\udbff\udc00", "a\u0000b", _BAD_MARK,
                                                "1e400", "NaN", "\u2028"])).filter(lambda s: not _DATE_LIKE.match(s))
NUMBERS = st.one_of(
    st.integers(-(2**70), 2**70).map(lambda i: Num(str(i))),
    st.integers(10**38, 10**40).map(lambda i: Num(str(i))),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda f: Num(repr(f))),
    st.sampled_from([Num("1e400"), Num("-2.5E-400"), Num("123456789012345678901234567890.5"), Num("0.1"), Num("-0")]),
)
SCALARS = st.one_of(st.none(), st.booleans(), NUMBERS, STRINGS)


def _deep(leaf: Any, depth: int, in_arrays: bool) -> Any:
    for level in range(depth):
        leaf = [leaf] if in_arrays and level % 2 else {"k": leaf}
    return leaf


VALUES = st.one_of(
    SCALARS,
    st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                  st.dictionaries(KEYS, inner, max_size=3)), max_leaves=8),
    st.builds(_deep, SCALARS, st.integers(1, MAX_DEPTH), st.booleans()),
)


@st.composite
def records(draw: st.DrawFn, count: int) -> list[dict[str, Any]]:
    """`count` records, each with a unique integer `id` (the primary key of the deduplicated streams)."""
    return [{"id": Num(str(i)), **draw(st.dictionaries(KEYS, VALUES, max_size=5))} for i in range(1, count + 1)]


# --- a catalog for the records ----------------------------------------------------------------------------------

def json_schema_of(values: list[Any]) -> dict[str, Any]:
    """A JSON Schema every value fits (what a producer's catalog would declare): scalars by kind, objects by their
    keys, arrays by their items; kinds that mix containers with other kinds are left untyped (JSON text)."""
    kinds = {_kind(v) for v in values if v is not None}
    if not kinds:
        return {"type": ["null", "string"]}
    if kinds <= {"integer", "number", "string", "boolean"}:
        scalar = sorted(kinds - {"integer"} if {"integer", "number"} <= kinds else kinds)
        return {"type": ["null", *scalar]}
    if kinds == {"object"}:
        keys = dict.fromkeys(k for v in values if isinstance(v, dict) for k in v)
        return {"type": ["null", "object"],
                "properties": {k: json_schema_of([v.get(k) for v in values if isinstance(v, dict)]) for k in keys}}
    if kinds == {"array"}:
        return {"type": ["null", "array"], "items": json_schema_of([i for v in values if v is not None for i in v])}
    return {}


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, Num):
        return "integer" if re.fullmatch(r"-?\d+", value.text) else "number"
    return {dict: "object", list: "array", str: "string"}[type(value)]
