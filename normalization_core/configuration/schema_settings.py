"""dlt's schema settings in the configuration (SPEC §5.4): contracts, detections, preferred types, column hints."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from normalization_core.configuration.validation import boolean, choice, entries, mapping, no_unknown_keys
from normalization_core.errors import ConfigError

CONTRACT_ENTITIES = ("tables", "columns", "data_type")
CONTRACT_MODES = ("evolve", "freeze", "discard_row", "discard_value")
DISCARD_MODES = ("discard_row", "discard_value")
_SETTINGS_KEYS = {"detections", "preferred_types"}
DETECTIONS = ("timestamp", "iso_timestamp", "iso_date", "large_integer", "hexbytes_to_text", "wei_to_double")
"""dlt's type detections (`timestamp`: numbers within five years of their record's extracted at, as epoch seconds)."""
_COLUMN_HINT_KEYS = {"data_type", "primary_key", "nullable"}
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


def parse_contract(doc: Any, where: str) -> dict[str, str]:
    """A mode for every entity (`freeze`), or some entities' modes (`{columns: freeze}`)."""
    if doc is None:
        return {}
    modes = {entity: doc for entity in CONTRACT_ENTITIES} if isinstance(doc, str) else mapping(
        doc, where, "'schema_contract'")
    no_unknown_keys(modes, set(CONTRACT_ENTITIES), where, "'schema_contract'")
    for entity, mode in modes.items():
        if mode not in CONTRACT_MODES:
            raise ConfigError(where, f"schema_contract.{entity}: unknown mode {mode!r} "
                                     f"(choose one of {', '.join(CONTRACT_MODES)})")
    return dict(modes)


def parse_settings(doc: Any, where: str) -> SchemaSettings:
    doc = mapping(doc, where, "'settings'")
    no_unknown_keys(doc, _SETTINGS_KEYS, where, "'settings'")
    detections = doc.get("detections", list(SchemaSettings.detections))
    if not isinstance(detections, list) or not all(d in DETECTIONS for d in detections):
        raise ConfigError(where, f"'detections' must be a list of {', '.join(DETECTIONS)}, got {detections!r}")
    preferred = []
    for name, data_type in mapping(doc.get("preferred_types") or {}, where, "'preferred_types'").items():
        if data_type not in DATA_TYPES:
            raise ConfigError(where, f"preferred_types.{name}: unknown data type {data_type!r} "
                                     f"(choose one of {', '.join(DATA_TYPES)})")
        if str(name).startswith("re:"):
            try:
                re.compile(str(name)[3:])
            except re.error as exc:
                raise ConfigError(where, f"preferred_types.{name}: not a valid regular expression ({exc})") from None
        preferred.append((str(name), data_type))
    return SchemaSettings(detections=tuple(detections), preferred_types=tuple(preferred))


def parse_column_hints(doc: Any, where: str) -> dict[str, ColumnHint]:
    return {column: ColumnHint(data_type=choice(body, "data_type", DATA_TYPES, at),
                               primary_key=boolean(body, "primary_key", False, at),
                               nullable=boolean(body, "nullable", True, at))
            for column, body, at in entries(doc, where, "columns", "a column hint", _COLUMN_HINT_KEYS)}
