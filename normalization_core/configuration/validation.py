"""Checks shared by the configuration parsers: each mistake is one clear `ConfigError` line."""
from __future__ import annotations

import difflib
from collections.abc import Iterator
from typing import Any

from normalization_core.errors import ConfigError


def entries(doc: Any, where: str, key: str, what: str, allowed: set[str]) -> Iterator[tuple[str, dict, str]]:
    """(name, settings, where) of each entry of the mapping under `key`, its keys checked."""
    for name, body in mapping(doc, where, f"'{key}'").items():
        at = f"{where}: {key}.{name}"
        body = mapping(body or {}, at, what)
        no_unknown_keys(body, allowed, at, what)
        yield str(name), body, at


def choice(doc: dict, key: str, choices: tuple[str, ...], where: str) -> str | None:
    value = doc.get(key)
    if value is not None and value not in choices:
        raise ConfigError(where, f"unknown {key} {value!r} (choose one of {', '.join(choices)})")
    return value


def boolean(doc: dict, key: str, default: bool, where: str) -> bool:
    value = doc.get(key, default)
    if not isinstance(value, bool):
        raise ConfigError(where, f"{key!r} must be true or false, got {value!r}")
    return value


def mapping(doc: Any, where: str, what: str) -> dict:
    if not isinstance(doc, dict):
        raise ConfigError(where, f"{what} must be a mapping, got {type(doc).__name__}")
    return doc


def no_unknown_keys(doc: dict, allowed: set[str], where: str, what: str) -> None:
    unknown = sorted(set(map(str, doc)) - allowed)
    if unknown:
        close = difflib.get_close_matches(unknown[0], sorted(allowed), n=1)
        hint = f": did you mean {close[0]!r}?" if close else ""
        raise ConfigError(where, f"unknown key {unknown[0]!r} in {what}{hint} (allowed: {', '.join(sorted(allowed))})")
