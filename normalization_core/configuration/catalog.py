"""An Airbyte ConfiguredAirbyteCatalog per source (SPEC §2.2), validated with jsonschema.

A plain AirbyteCatalog (as `discover` prints it, streams without `destination_sync_mode`) is read too:
its streams are `append`, as Airbyte configures a stream by default.
"""
from __future__ import annotations

import functools
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema

from normalization_core.configuration.config import SYNC_MODES, SourceConfig
from normalization_core.schema.stream_settings import StreamSettings
from normalization_core.errors import ConfigError

_PATH = {"type": "array", "items": {"type": "string"}}
CATALOG_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["streams"],
    "properties": {"streams": {"type": "array", "items": {
        "type": "object",
        "required": ["stream"],
        "properties": {
            "stream": {"type": "object", "required": ["name", "json_schema"], "properties": {
                "name": {"type": "string", "minLength": 1},
                "json_schema": {"type": "object"},
                "namespace": {"type": ["string", "null"]},
            }},
            "sync_mode": {"enum": ["full_refresh", "incremental"]},
            "destination_sync_mode": {"enum": list(SYNC_MODES)},
            "cursor_field": _PATH,
            "primary_key": {"type": "array", "items": _PATH},
        },
    }}},
}


def load_catalog(path: Path) -> dict[str, StreamSettings]:
    """Streams of a catalog file by name; an invalid catalog names the stream and the key. The file is read and
    validated once per process while it stays as it is (same modification time and size)."""
    try:
        stat = path.stat()
    except OSError as exc:
        raise ConfigError(str(path), f"catalog is not readable JSON: {exc}") from None
    return dict(_catalog_file(path, stat.st_mtime_ns, stat.st_size))


@functools.lru_cache(maxsize=64)
def _catalog_file(path: Path, mtime_ns: int, size: int) -> dict[str, StreamSettings]:
    """(`mtime_ns`, `size`: the file's version, part of the cache key.)"""
    try:
        doc = json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(str(path), f"catalog is not readable JSON: {exc}") from None
    return parse_catalog(doc, str(path))


def parse_catalog(doc: Any, where: str = "catalog") -> dict[str, StreamSettings]:
    error = jsonschema.exceptions.best_match(jsonschema.Draft7Validator(CATALOG_SCHEMA).iter_errors(doc))
    if error is not None:
        raise ConfigError(where, f"{_stream_of(doc, error)}key '{_key_path(error)}': {error.message}")
    streams: dict[str, StreamSettings] = {}
    for entry in doc["streams"]:
        name = entry["stream"]["name"]
        schema = entry["stream"]["json_schema"]
        try:
            jsonschema.Draft7Validator.check_schema(schema)
        except jsonschema.SchemaError as exc:
            key = "/".join(map(str, exc.absolute_path)) or "json_schema"
            raise ConfigError(where, f"stream {name!r}: json_schema key '{key}': {exc.message}") from None
        if name in streams:
            raise ConfigError(where, f"stream {name!r} is listed twice")
        streams[name] = StreamSettings(
            name=name, json_schema=schema, destination_sync_mode=entry.get("destination_sync_mode", "append"),
            namespace=entry["stream"].get("namespace"),
            cursor_field=tuple(entry.get("cursor_field") or ()),
            primary_key=tuple(tuple(p) for p in entry.get("primary_key") or ()))
    return streams


def configured_settings(source: SourceConfig, catalog: dict[str, StreamSettings], stream: str) -> StreamSettings:
    """The catalog's settings for a stream with the configuration's overrides applied."""
    settings = catalog.get(stream) or StreamSettings(name=stream, json_schema=None)
    override = source.streams.get(stream)
    if override is None:
        return settings
    hinted_key = tuple((column,) for column, hint in override.columns.items() if hint.primary_key)
    primary_key = override.primary_key if override.primary_key is not None else hinted_key or settings.primary_key
    return replace(
        settings,
        destination_sync_mode=override.destination_sync_mode or settings.destination_sync_mode,
        cursor_field=override.cursor_field if override.cursor_field is not None else settings.cursor_field,
        primary_key=primary_key,
    )


def _key_path(error: jsonschema.ValidationError) -> str:
    return "/".join(map(str, error.absolute_path)) or "top level"


def _stream_of(doc: Any, error: jsonschema.ValidationError) -> str:
    path = list(error.absolute_path)
    if len(path) >= 2 and path[0] == "streams" and isinstance(path[1], int):
        try:
            return f"stream {doc['streams'][path[1]]['stream']['name']!r}: "
        except (KeyError, TypeError, IndexError):
            return f"stream #{path[1]}: "
    return ""
