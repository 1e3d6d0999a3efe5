"""Typed, validated configuration (SPEC §2.3). Unknown keys are errors: typos must not pass."""
from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, get_args

import yaml

from normalization_core.configuration.register import Registration, metastore_defaults, parse_register
from normalization_core.configuration.schema_settings import (
    ColumnHint,
    SchemaSettings,
    parse_column_hints,
    parse_contract,
    parse_settings,
)
from normalization_core.configuration.validation import boolean, choice, entries, mapping, no_unknown_keys
from normalization_core.errors import ConfigError
from normalization_core.io.engine_runs import ENGINE_MAX_MEMORY, ENGINE_MAX_RUNS
from normalization_core.io.storage import ObjectStore, StorePath, is_s3, is_uri
from normalization_core.naming.conventions import CONVENTIONS, DEFAULT_CONVENTION
from normalization_core.schema.contract import SchemaContract
from normalization_core.schema.model import StreamSchema
from normalization_core.schema.schema_file import read_schema_file

SyncMode = Literal["append", "overwrite", "append_dedup"]
InputKindName = Literal["packages", "airbyte_destination", "singer", "dlt_extract"]
INPUT_KINDS: tuple[str, ...] = get_args(InputKindName)
DEFAULT_SETTLE_SECONDS = 60
SYNC_MODES: tuple[str, ...] = get_args(SyncMode)
DEFAULT_CONFIG_FILE = "lakenorm.yaml"
CONFIG_ENV = "LAKENORM_CONFIG"
DEFAULT_SPARK = {"master": "local[2]"}
_SOURCE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
_TOP_KEYS = {"warehouse", "sources", "spark", "object_store"}
_OBJECT_STORE_KEYS = {"endpoint", "region", "path_style_access"}
_SOURCE_KEYS = {"name", "landing", "catalog", "convention", "max_identifier_length",
                "max_table_nesting", "streams", "input", "settle_seconds", "deletion_vectors", "settings",
                "schema_contract", "schema_file", "register"}
_STREAM_KEYS = {"destination_sync_mode", "primary_key", "cursor_field", "columns", "schema_contract", "schema_file"}


@dataclass(frozen=True)
class StreamOverride:
    """Per-stream settings that take precedence over the catalog."""

    destination_sync_mode: SyncMode | None = None
    primary_key: tuple[tuple[str, ...], ...] | None = None
    cursor_field: tuple[str, ...] | None = None
    schema_contract: dict[str, str] = field(default_factory=dict)
    """Contract modes by entity that replace the source's for this stream."""
    columns: dict[str, ColumnHint] = field(default_factory=dict)
    schema: StreamSchema | None = None
    """The stream's schema from its `schema_file` (`lakenorm schema` output, edited): evolved from, not inferred."""
    """Hints per root column of an inferred stream by record key (matched after normalizing), as dlt's `columns=`."""


@dataclass(frozen=True)
class SourceConfig:
    name: str
    landing: Path | StorePath
    """A local folder, or an `s3a://` URI (`io.storage.StorePath`)."""
    convention: str = DEFAULT_CONVENTION
    """A name in `conventions.CONVENTIONS`."""
    catalog: Path | None = None
    max_identifier_length: int = 255
    max_table_nesting: int = 1000
    streams: dict[str, StreamOverride] = field(default_factory=dict)
    input: InputKindName = "packages"
    """What the landing holds (SPEC §2.4): an input kind of `normalization_core.inputs`."""
    settle_seconds: int = DEFAULT_SETTLE_SECONDS
    """Producer files (not `packages`) modified less than this long ago are still being written: skipped."""
    settings: SchemaSettings = SchemaSettings()
    schema_contract: SchemaContract = SchemaContract()
    deletion_vectors: bool = False
    schemas: dict[str, StreamSchema] = field(default_factory=dict)
    """Streams' schemas from the source's `schema_file` (a stream's own `schema_file` wins)."""
    """Whether `append_dedup` tables (history, current, children) use Delta deletion vectors: cheaper MERGEs,
    but only Spark and delta-rs's query engine read such tables (not `to_pyarrow_table()`)."""
    register: Registration | None = None
    """Where the source's tables are registered by name (`configuration.register`); None: by path only."""


@dataclass(frozen=True)
class LakenormConfig:
    warehouse: str
    """Delta tables root: an absolute local path or an object-store URI."""
    sources: tuple[SourceConfig, ...]
    spark: dict[str, str]
    path: Path | None = None
    """The file this configuration was read from, if any."""
    object_store: ObjectStore | None = None
    """Where `s3a://` locations are served; None when no location is one."""

    def source(self, name: str) -> SourceConfig:
        for src in self.sources:
            if src.name == name:
                return src
        known = ", ".join(s.name for s in self.sources)
        raise ConfigError(str(self.path or "configuration"), f"unknown source {name!r} (known: {known})")

    def table_path(self, source: str, table: str) -> str:
        """Where a table lives: `<warehouse>/<source>/<table>`; both names are identifiers."""
        return f"{self.warehouse.rstrip('/')}/{source}/{table}"

    def storage_options(self, location: str) -> dict[str, str] | None:
        """delta-rs options to read `location` (None for a local path)."""
        if self.object_store is None or not is_s3(location):
            return None
        return self.object_store.storage_options()


def find_config_file(explicit: str | os.PathLike[str] | None = None, fallbacks: Sequence[Path] = ()) -> Path:
    """The explicit path, else $LAKENORM_CONFIG, else ./lakenorm.yaml, else the first of `fallbacks` that is
    a file (none: ./lakenorm.yaml, which is then missing)."""
    chosen = explicit or os.environ.get(CONFIG_ENV) or next(
        (p for p in (Path(DEFAULT_CONFIG_FILE), *fallbacks) if p.is_file()), DEFAULT_CONFIG_FILE)
    path = Path(chosen)
    if not path.is_file():
        raise ConfigError(str(path), f"no such configuration file (pass --config or set {CONFIG_ENV})")
    return path


def load_config(path: str | os.PathLike[str] | None = None, fallbacks: Sequence[Path] = ()) -> LakenormConfig:
    """Read and validate a configuration file (`find_config_file`); relative paths resolve against its folder."""
    file = find_config_file(path, fallbacks)
    try:
        doc = yaml.safe_load(file.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(str(file), f"not valid YAML: {exc}".replace("\n", " ")) from None
    return parse_config(doc, base_dir=file.resolve().parent, where=str(file))


def parse_config(doc: Any, base_dir: Path, where: str = "configuration") -> LakenormConfig:
    """Validate a configuration document (the parsed YAML)."""
    doc = mapping(doc, where, "the top level")
    no_unknown_keys(doc, _TOP_KEYS, where, "the top level")
    if "warehouse" not in doc:
        raise ConfigError(where, "missing key 'warehouse' (the root folder or URI of the Delta tables)")
    sources = doc.get("sources") or []
    if not isinstance(sources, list) or not sources:
        raise ConfigError(where, "'sources' must be a non-empty list")
    warehouse = _resolve_location(str(doc["warehouse"]), base_dir, where)
    landings = [str(s.get("landing", "")) for s in sources if isinstance(s, dict)]
    store = _parse_object_store(doc.get("object_store"), [warehouse, *landings], where)
    parsed = tuple(_parse_source(s, base_dir, f"{where}: sources[{i}]", store) for i, s in enumerate(sources))
    names = [s.name for s in parsed]
    if len(set(names)) != len(names):
        raise ConfigError(where, f"source names must be unique, got {names}")
    spark = metastore_defaults(_parse_spark(doc.get("spark"), where), [s.register for s in parsed], warehouse)
    if store is not None:  # the user's own `spark.hadoop.fs.s3a.*` settings win
        spark = {**{f"spark.hadoop.{k}": v for k, v in store.hadoop_conf().items()}, **spark}
    return LakenormConfig(warehouse=warehouse, sources=parsed, spark=spark,
                          path=Path(where) if where != "configuration" else None, object_store=store)


def _parse_object_store(doc: Any, locations: list[str], where: str) -> ObjectStore | None:
    """The `object_store` section; implied (AWS defaults) when a location is `s3a://` and it is absent."""
    if doc is None:
        return ObjectStore() if any(is_s3(loc) for loc in locations) else None
    at = f"{where}: object_store"
    doc = mapping(doc, at, "'object_store'")
    no_unknown_keys(doc, _OBJECT_STORE_KEYS, at, "'object_store'")
    endpoint = doc.get("endpoint")
    if endpoint is not None and not re.match(r"^https?://[^/\s]+/?$", str(endpoint)):
        raise ConfigError(at, f"endpoint {endpoint!r} must be http(s)://host[:port]")
    path_style = doc.get("path_style_access")
    if path_style is not None and not isinstance(path_style, bool):
        raise ConfigError(at, f"'path_style_access' must be true or false, got {path_style!r}")
    region = doc.get("region")
    return ObjectStore(endpoint=None if endpoint is None else str(endpoint).rstrip("/"),
                       region=None if region is None else str(region), path_style_access=path_style)


def _parse_source(doc: Any, base_dir: Path, where: str, store: ObjectStore | None) -> SourceConfig:
    doc = mapping(doc, where, "a source")
    no_unknown_keys(doc, _SOURCE_KEYS, where, "a source")
    for key in ("name", "landing"):
        if key not in doc:
            raise ConfigError(where, f"missing key {key!r}")
    name = str(doc["name"])
    if not _SOURCE_NAME.match(name):
        raise ConfigError(where, f"source name {name!r} must be a letter or '_' followed by letters, "
                                 "digits or '_' (it names folders and Dagster asset keys)")
    where = f"{where} ({name})"
    convention = doc.get("convention", DEFAULT_CONVENTION)
    if not isinstance(convention, str) or convention not in CONVENTIONS:
        raise ConfigError(where, f"unknown convention {convention!r} (choose one of {', '.join(CONVENTIONS)})")
    landing = _landing(str(doc["landing"]), base_dir, where, store)
    catalog = None
    if doc.get("catalog") is not None:
        catalog = (base_dir / str(doc["catalog"])).resolve()
        if not catalog.is_file():
            raise ConfigError(where, f"catalog file {catalog} does not exist")
    kind = doc.get("input", "packages")
    if kind not in INPUT_KINDS:
        raise ConfigError(where, f"unknown input {kind!r} (choose one of {', '.join(INPUT_KINDS)})")
    chosen = CONVENTIONS[convention]
    max_len = _positive_int(doc, "max_identifier_length", chosen.default_max_identifier_length, where)
    if max_len < chosen.min_identifier_length:
        raise ConfigError(where, f"max_identifier_length must be at least {chosen.min_identifier_length} "
                                 f"for convention {convention!r}")
    return SourceConfig(
        name=name, landing=landing, convention=convention, catalog=catalog,
        max_identifier_length=max_len,
        max_table_nesting=_positive_int(doc, "max_table_nesting", 1000, where),
        streams=_parse_stream_overrides(doc.get("streams") or {}, base_dir, where, convention),
        input=kind, settle_seconds=_non_negative_int(doc, "settle_seconds", DEFAULT_SETTLE_SECONDS, where),
        deletion_vectors=boolean(doc, "deletion_vectors", False, where),
        schemas=_schema_file(doc, base_dir, where, None, convention),
        settings=parse_settings(doc.get("settings") or {}, f"{where}: settings"),
        schema_contract=SchemaContract(**parse_contract(doc.get("schema_contract"), where)),
        register=parse_register(doc.get("register"), where),
    )


def _schema_file(doc: dict, base_dir: Path, where: str, stream: str | None, convention: str) -> dict[str, StreamSchema]:
    """The schemas of a `schema_file` by stream (of `stream` only, when given), validated."""
    if doc.get("schema_file") is None:
        return {}
    path = (base_dir / str(doc["schema_file"])).resolve()
    if not path.is_file():
        raise ConfigError(where, f"schema_file {path} does not exist")
    return read_schema_file(path, stream, convention)


def _parse_stream_overrides(doc: Any, base_dir: Path, where: str, convention: str) -> dict[str, StreamOverride]:
    overrides = {}
    for stream, body, at in entries(doc, where, "streams", "a stream override", _STREAM_KEYS):
        mode = choice(body, "destination_sync_mode", SYNC_MODES, at)
        pk = body.get("primary_key")
        cursor = body.get("cursor_field")
        overrides[str(stream)] = StreamOverride(
            destination_sync_mode=mode,
            primary_key=None if pk is None else tuple(tuple(_path(p, at)) for p in _key_list(pk, at)),
            cursor_field=None if cursor is None else tuple(_path(cursor, at)),
            columns=parse_column_hints(body.get("columns") or {}, at),
            schema=_schema_file(body, base_dir, at, str(stream), convention).get(str(stream)),
            schema_contract=parse_contract(body.get("schema_contract"), at),
        )
    return overrides


def _key_list(value: Any, where: str) -> list:
    """`primary_key`: one column (`id`, as dlt takes it) or a list of field paths."""
    return [value] if isinstance(value, str) else value if isinstance(value, list) else [_path(value, where)]


def _parse_spark(doc: Any, where: str) -> dict[str, str]:
    doc = mapping(doc if doc is not None else {}, where, "'spark'")
    conf = dict(DEFAULT_SPARK)
    for key, value in doc.items():
        key = "remote" if key == "spark.remote" else key  # Spark's own name for it
        if key not in ("master", "remote", *ENGINE_LIMITS) and not str(key).startswith("spark."):
            raise ConfigError(where, f"unknown key 'spark.{key}': use 'master', 'remote', "
                                     f"{', '.join(map(repr, ENGINE_LIMITS))} or a Spark property 'spark.*'")
        if key in ENGINE_LIMITS and not ENGINE_LIMITS[key].fullmatch(str(value)):
            raise ConfigError(where, f"spark.{key} {value!r}: {ENGINE_LIMIT_TEXT[key]}")
        conf[str(key)] = str(value).lower() if isinstance(value, bool) else str(value)
    if "remote" in conf and not _REMOTE.match(conf["remote"]):
        raise ConfigError(where, f"spark.remote {conf['remote']!r}: a Spark Connect address "
                                 "sc://host[:port][/;param=value]")
    return conf


ENGINE_LIMITS = {ENGINE_MAX_RUNS: re.compile(r"[1-9][0-9]*"),
                 ENGINE_MAX_MEMORY: re.compile(r"[1-9][0-9]*\s*([kKmMgGtT][bB]?)?")}
"""`spark:` keys of the local engine (`lakenorm engine start`): before a run, an idle engine that has served
`engine_max_runs` runs, or whose server holds more than `engine_max_memory` (bytes, or 4g, 6144m), is restarted
(io/engine_runs.py)."""
ENGINE_LIMIT_TEXT = {ENGINE_MAX_RUNS: "a positive number of runs",
                     ENGINE_MAX_MEMORY: "a size such as 6g or 6144m (the server's resident memory)"}

_REMOTE = re.compile(r"^sc://[^/:;]+(:[0-9]{1,5})?(/.*)?$")
"""`spark.remote`: a Spark Connect endpoint (`sc://host:port`, optionally `/;token=...` and other parameters).
Spark's `local` remote (a server started inside the client process) is not a place lakenorm runs."""


def _landing(location: str, base_dir: Path, where: str, store: ObjectStore | None) -> Path | StorePath:
    """A local folder that exists, or an `s3a://` URI (checked when it is listed, not here: no network)."""
    if is_uri(location):
        if not is_s3(location) or not location.split("://", 1)[1].strip("/"):
            raise ConfigError(where, f"landing {location!r}: a local folder or an s3a://bucket[/prefix] URI")
        assert store is not None  # implied by any s3a:// location
        return StorePath(location.rstrip("/"), store)
    landing = (base_dir / location).resolve()
    if not landing.is_dir():
        raise ConfigError(where, f"landing folder {landing} does not exist (create it or fix 'landing')")
    return landing


def _resolve_location(location: str, base_dir: Path, where: str) -> str:
    if is_uri(location):
        if is_s3(location) and not location.split("://", 1)[1].strip("/"):
            raise ConfigError(where, f"warehouse {location!r} names no bucket (s3a://bucket[/prefix])")
        return location.rstrip("/")
    return str((base_dir / location).resolve())


def _path(value: Any, where: str) -> list[str]:
    """A field path: `"a"` or `["a", "b"]`."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return list(value)
    raise ConfigError(where, f"a field path must be a string or a list of strings, got {value!r}")


def _positive_int(doc: dict, key: str, default: int, where: str) -> int:
    value = doc.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(where, f"{key!r} must be a positive integer, got {value!r}")
    return value


def _non_negative_int(doc: dict, key: str, default: int, where: str) -> int:
    value = doc.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ConfigError(where, f"{key!r} must be a non-negative integer (seconds), got {value!r}")
    return value


def stream_contract(source: SourceConfig, stream: str) -> SchemaContract:
    """The source's schema contract with the stream's own modes over it."""
    override = source.streams.get(stream)
    return replace(source.schema_contract, **override.schema_contract) if override else source.schema_contract
