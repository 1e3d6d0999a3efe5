"""dlt's schema settings in the configuration (SPEC §5.4): contracts, detections, preferred types, column hints."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from normalization_core.errors import ConfigError

CONTRACT_ENTITIES = ("tables", "columns", "data_type")
CONTRACT_MODES = ("evolve", "freeze", "discard_row", "discard_value")
DISCARD_MODES = ("discard_row", "discard_value")
DETECTIONS = ("timestamp", "iso_timestamp", "iso_date", "large_integer", "hexbytes_to_text", "wei_to_double")
"""dlt's type detections (`timestamp`: numbers within five years of their record's extracted at, as epoch seconds)."""
DATA_TYPES = ("text", "bigint", "double", "bool", "timestamp", "date", "decimal", "json")
"""dlt's data types a column hint may name (an inferred column's type; SPEC §5.2)."""


@dataclass(frozen=True)
class ColumnHint:
    """dlt's column hints for a column of an inferred stream's root table (SPEC §5.4)."""

    data_type: str | None = None
    primary_key: bool = False
    nullable: bool = True
    """`false`: a record whose value is null or missing fails the load before anything is committed (as dlt)."""


@dataclass(frozen=True)
class SchemaSettings:
    """dlt's schema `settings` of a source (SPEC §5.4): steer the types of inferred columns."""

    detections: tuple[str, ...] = ("iso_timestamp",)
    preferred_types: tuple[tuple[str, str], ...] = ()
    """(column name or `re:<regex>`, dlt data type), in order: the first that matches a new column wins."""


def parse_contract(doc: str | dict[str, str] | None) -> dict[str, str]:
    """A mode for every entity (`freeze`), or some entities' modes (`{columns: freeze}`)."""
    if doc is None:
        return {}
    return {entity: doc for entity in CONTRACT_ENTITIES} if isinstance(doc, str) else dict(doc)


def parse_settings(doc: dict[str, Any], where: str) -> SchemaSettings:
    preferred = list((doc.get("preferred_types") or {}).items())
    for name, _ in preferred:
        if name.startswith("re:"):
            try:
                re.compile(name[3:])
            except re.error as exc:
                raise ConfigError(where, f"preferred_types.{name}: not a valid regular expression ({exc})") from None
    return SchemaSettings(detections=tuple(doc.get("detections", SchemaSettings.detections)),
                          preferred_types=tuple(preferred))


def parse_column_hints(doc: dict[str, dict[str, Any] | None]) -> dict[str, ColumnHint]:
    return {str(column): ColumnHint(**(body or {})) for column, body in doc.items()}
