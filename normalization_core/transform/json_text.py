"""Parts of a JSON line cut out as the producer wrote them (SPEC §3: raw keeps the record's text untouched).

Spark's `from_json` and `get_json_object` hand a nested value back re-serialized (`3170.00` -> `3170.0`, a
30-digit decimal -> a double, escapes folded), so a record inside a message (Singer's `record`, Airbyte's
`record.data`, a destination's `_airbyte_data`) is cut out of the line with a regular expression instead, on
the executors. The expression reads JSON's structure only as far as it needs: strings (skipped whole, escapes
included), runs of other characters, and containers nested up to `MAX_DEPTH` levels; every quantifier is
possessive, so matching never backtracks and its stack depth is bounded by the nesting, not the line's length.
A value the expression cannot cut (nested deeper than `MAX_DEPTH`, a key written with escapes) gives "",
and the caller falls back to Spark's re-serialized text.
"""
from __future__ import annotations

import re
from collections.abc import Sequence

from pyspark.sql import Column
from pyspark.sql import functions as F

MAX_DEPTH = 128
"""Containers nested deeper than this inside a cut value are not cut (bounded by the executors' thread stack)."""
STRING = r'"[^"\\]*+(?:\\.[^"\\]*+)*+"'
_PLAIN = r'[^{}\[\]"]++'
_SCALAR = r'[^\s{}\[\]",:]++'
_WS = r"\s*+"


def _container(depth: int) -> str:
    """An object or array holding containers nested at most `depth` levels (brackets are not paired by kind:
    the text is also parsed as JSON, which checks them)."""
    inner = ""
    for _ in range(depth + 1):
        nested = f"|{inner}" if inner else ""
        inner = rf"[{{\[](?:{STRING}|{_PLAIN}{nested})*+[}}\]]"
    return inner


_VALUE = f"(?:{STRING}|{_container(MAX_DEPTH)}|{_SCALAR})"
_MEMBER = f"{STRING}{_WS}:{_WS}{_VALUE}"


def _key(name: str) -> str:
    return re.escape('"' + name + '"')


def _into_member(name: str) -> str:
    """From inside an object (after `{`), past the members before `name`, to the start of `name`'s value."""
    key = _key(name)
    return f"(?:{_WS}(?!{key}{_WS}:){_MEMBER}{_WS},)*+{_WS}{key}{_WS}:{_WS}"


def member_text_pattern(path: Sequence[str]) -> str:
    """A pattern whose group 1 is the text of the value at `path` (object keys from the line's root)."""
    return "^" + _WS + "".join(r"\{" + _into_member(name) for name in path) + f"({_VALUE})"


def member_text(line: Column, path: Sequence[str], parsed: Column) -> Column:
    """The value at `path` as it is written in `line`; where it cannot be cut, `parsed` (Spark's text of it)."""
    cut = F.regexp_extract(line, member_text_pattern(path), 1)
    return F.when(parsed.isNull(), parsed).when(cut != "", cut).otherwise(parsed)


_ROOT_MEMBERS = rf"(?:^{_WS}\{{|\G{_WS},){_WS}({_MEMBER})"
_ELEMENTS = rf"(?:^{_WS}\[|\G{_WS},){_WS}({_VALUE})"


def object_without(line: Column, prefix: str) -> Column:
    """The root object's members whose keys do not start with `prefix`, each as written, joined by commas.
    NULL when the line's members cannot all be cut."""
    members = F.regexp_extract_all(line, F.lit(_ROOT_MEMBERS), 1)
    kept = F.filter(members, lambda member: ~member.startswith('"' + prefix))
    cut_all = F.size(members) == F.size(F.json_object_keys(line))
    return F.when(cut_all, F.concat(F.lit("{"), F.array_join(kept, ","), F.lit("}")))


def array_elements(line: Column) -> Column:
    """The elements of a JSON array line, each as written; NULL when they cannot all be cut."""
    elements = F.regexp_extract_all(line, F.lit(_ELEMENTS), 1)
    return F.when(F.size(elements) == F.json_array_length(line), elements)
