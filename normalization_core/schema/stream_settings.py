"""How one stream is typed and written: the settings document a catalog, an input's own schemas and the
configuration fill in (`configuration.catalog.configured_settings`).

A document of the schema layer, beside the schema it types: input kinds (which may bring stream settings), the
catalog, the plans and the transforms all read it, and it imports no configuration.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from normalization_core.errors import ConfigError
from normalization_core.schema.model import TableSchema


@dataclass(frozen=True)
class StreamSettings:
    """How one stream is typed and written."""

    name: str
    json_schema: dict[str, Any] | None
    """None: typed by inference."""
    destination_sync_mode: str = "append"
    cursor_field: tuple[str, ...] = ()
    primary_key: tuple[tuple[str, ...], ...] = ()
    namespace: str | None = None
    """The catalog stream's namespace (Airbyte hashes it into colliding table names)."""


def resolve_primary_key(settings: StreamSettings, root: TableSchema) -> tuple[str, ...]:
    """The root columns of the stream's primary key paths, in key order (empty: the stream has none);
    a path that is not a column of the root table is a configuration error."""
    by_path = {tuple(c["path"]): c["name"] for c in root["columns"]}
    missing = [path for path in settings.primary_key if tuple(path) not in by_path]
    if missing:
        raise ConfigError(f"stream {settings.name!r}",
                          f"primary_key {'.'.join(missing[0])!r} is not a scalar column of the stream")
    return tuple(by_path[tuple(path)] for path in settings.primary_key)
