"""Naming conventions as plug-ins behind one interface (SPEC §4).

`get_convention("native" | "dlt" | "airbyte" | "direct" | "package.module:ClassName")` returns a `NamingConvention`.
"""
from __future__ import annotations

import importlib
import inspect

from normalization_core.naming.airbyte import AirbyteNaming
from normalization_core.naming.base import NamingConvention
from normalization_core.naming.direct import DirectNaming
from normalization_core.naming.collisions import NameAssignment, NameCollision, assign_names
from normalization_core.naming.snake_case import DltNaming, SnakeCaseNaming

CONVENTIONS: dict[str, type[NamingConvention]] = {
    SnakeCaseNaming.name: SnakeCaseNaming,
    DltNaming.name: DltNaming,
    AirbyteNaming.name: AirbyteNaming,
    DirectNaming.name: DirectNaming,
}
"""Built-in conventions by short name."""

__all__ = [
    "CONVENTIONS",
    "AirbyteNaming",
    "DirectNaming",
    "DltNaming",
    "NameAssignment",
    "NameCollision",
    "NamingConvention",
    "SnakeCaseNaming",
    "assign_names",
    "get_convention",
]


def get_convention(reference: str | type[NamingConvention], max_identifier_length: int | None = None
                   ) -> NamingConvention:
    """Resolve a short name, a `module:Class` or dotted path, or a class; `None` length = its default."""
    return _resolve(reference)(max_identifier_length)


def _resolve(reference: str | type[NamingConvention]) -> type[NamingConvention]:
    if isinstance(reference, type) and issubclass(reference, NamingConvention):
        return reference
    if isinstance(reference, str) and reference in CONVENTIONS:
        return CONVENTIONS[reference]
    if not isinstance(reference, str) or not ("." in reference or ":" in reference):
        raise _unknown(reference, "not a known name")
    module_name, _, class_name = reference.rpartition(":") if ":" in reference else reference.rpartition(".")
    try:
        found = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError, ValueError) as err:
        raise _unknown(reference, f"cannot be imported ({err})") from err
    if not (isinstance(found, type) and issubclass(found, NamingConvention)):
        raise _unknown(reference, "is not a NamingConvention subclass")
    if inspect.isabstract(found):
        raise _unknown(reference, "is abstract")
    return found


def _unknown(reference: object, why: str) -> ValueError:
    valid = ", ".join(CONVENTIONS)
    return ValueError(f"unknown naming convention {reference!r}: {why}; "
                      f"use one of {valid} or 'package.module:ClassName' of a NamingConvention subclass")
