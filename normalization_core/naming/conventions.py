"""The conventions a source is written by (SPEC §3, §4): one `Convention` record each, that every module asks.

A convention is a naming class, a set of system names, the layout of a catalog stream's tables and the
identifier limits a source may set. A naming plug-in (`package.module:ClassName`, `get_convention`) names
tables and columns but is no convention: it has no system names and no layout.
"""
from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass

from normalization_core.columns import AIRBYTE, DLT, NATIVE, SystemNames
from normalization_core.naming import AirbyteNaming, DirectNaming, DltNaming, NamingConvention, SnakeCaseNaming


@dataclass(frozen=True)
class Convention:
    """Everything that differs between two conventions."""

    name: str
    naming: type[NamingConvention]
    system_names: SystemNames
    layout: str
    """`Layout.name` of the layout of a catalog stream's tables (`dlt` or `airbyte`); inferred streams are
    laid out dlt's way under every convention."""
    disambiguates_streams: bool = False
    """Tables of different streams that get one name are renamed as Airbyte does (else: refused)."""

    @property
    def default_max_identifier_length(self) -> int:
        return self.naming.default_max_identifier_length

    @property
    def min_identifier_length(self) -> int:
        return self.naming.min_identifier_length


CONVENTIONS: dict[str, Convention] = {c.name: c for c in (
    Convention("native", SnakeCaseNaming, NATIVE, layout="dlt"),
    Convention("dlt", DltNaming, DLT, layout="dlt"),
    Convention("airbyte", AirbyteNaming, AIRBYTE, layout="airbyte", disambiguates_streams=True),
    Convention("direct", DirectNaming, DLT, layout="dlt"),
)}
"""The conventions by name, in the order they are offered."""
DEFAULT_CONVENTION = "native"
"""A source's convention when its configuration names none."""


def convention_named(name: str, use: str = "lakenorm") -> Convention:
    """The convention `name`; a ValueError says what `use` supports."""
    if name not in CONVENTIONS:
        raise ValueError(f"convention {name!r}: {use} supports {tuple(CONVENTIONS)}")
    return CONVENTIONS[name]


def system_names(convention: str) -> SystemNames:
    return CONVENTIONS[convention].system_names


@dataclass(frozen=True)
class SourceConvention:
    """A source's convention resolved once, at the source's identifier limit (`SourceConfig.naming`): plans,
    table names and inputs ask it instead of looking the convention up again."""

    convention: Convention
    identifiers: NamingConvention
    """How the source's tables and columns are named and shortened."""

    @property
    def names(self) -> SystemNames:
        return self.convention.system_names


def source_convention(name: str, max_identifier_length: int | None = None) -> SourceConvention:
    """The convention `name` (one of `CONVENTIONS`) with its naming at `max_identifier_length`."""
    return SourceConvention(CONVENTIONS[name], get_convention(name, max_identifier_length))


def get_convention(reference: str | type[NamingConvention], max_identifier_length: int | None = None
                   ) -> NamingConvention:
    """The naming of a convention's name, a `module:Class` or dotted path, or a class; `None` length = its default."""
    return _naming_class(reference)(max_identifier_length)


def _naming_class(reference: str | type[NamingConvention]) -> type[NamingConvention]:
    if isinstance(reference, type) and issubclass(reference, NamingConvention):
        return reference
    if isinstance(reference, str) and reference in CONVENTIONS:
        return CONVENTIONS[reference].naming
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
