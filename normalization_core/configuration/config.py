"""Typed, validated configuration (SPEC §2.3). Unknown keys are errors: typos must not pass."""
from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, get_args

import yaml

from normalization_core.configuration.register import (Registration, metastore_defaults, metastore_server_settings,
                                                      parse_register)
from normalization_core.configuration.schema_settings import (
    ColumnHint,
    SchemaSettings,
    parse_column_hints,
    parse_contract,
    parse_settings,
)
from normalization_core.configuration.validation import check_schema
from normalization_core.errors import ConfigError
from normalization_core.io.storage import ObjectStore, StorePath, is_s3, is_uri
from normalization_core.naming.conventions import CONVENTIONS, DEFAULT_CONVENTION, SourceConvention, source_convention
from normalization_core.schema.contract import SchemaContract
from normalization_core.schema.model import StreamSchema
from normalization_core.schema.schema_file import read_schema_file

SyncMode = Literal["append", "overwrite", "append_dedup"]
InputKindName = Literal["packages", "airbyte_destination", "singer", "dlt_extract"]
INPUT_KINDS: tuple[str, ...] = get_args(InputKindName)
DEFAULT_SETTLE_SECONDS = 60
DEFAULT_MAX_LOADS_PER_RUN = 50
SYNC_MODES: tuple[str, ...] = get_args(SyncMode)
DEFAULT_CONFIG_FILE = "lakenorm.yaml"
CONFIG_ENV = "LAKENORM_CONFIG"
DEFAULT_SPARK = {"master": "local[2]"}
AssetKeys = tuple[tuple[str, ...], ...]
"""Dagster asset keys, each the tuple of its parts (the library itself does not import Dagster)."""
AutomationName = Literal["sensor", "on_upstream"]


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
    upstream: AssetKeys | None = None
    """What produces the stream's landing (Dagster asset keys), instead of the source's `upstream`."""


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
    upstream: AssetKeys = ()
    """The Dagster assets that produce the landing: every raw table depends on them (SPEC §8)."""
    max_loads_per_run: int = DEFAULT_MAX_LOADS_PER_RUN
    """In Dagster, the most load IDs one run normalizes (a sensor tick's run, a backfill's runs)."""
    automation: AutomationName = "sensor"
    """In Dagster, what runs new loads: the landing sensor (`sensor`), or Declarative Automation once the source's
    upstream assets have materialized (`on_upstream`; the sensor then only registers them)."""

    @cached_property
    def naming(self) -> SourceConvention:
        """The source's convention, resolved once: its system names and its naming at `max_identifier_length`."""
        return source_convention(self.convention, self.max_identifier_length)


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
    """Validate a configuration document (the parsed YAML): its keys, types and choices by the JSON Schema
    (`lakenorm.schema.json`), then what a schema cannot say."""
    doc = _as_text(doc)
    check_schema(doc, where)
    warehouse = _resolve_location(doc["warehouse"], base_dir, where)
    sources = doc["sources"]
    store = _parse_object_store(doc.get("object_store"), [warehouse, *(s["landing"] for s in sources)])
    parsed = tuple(_parse_source(s, base_dir, f"{where}: sources[{i}] ({s['name']})", store)
                   for i, s in enumerate(sources))
    names = [s.name for s in parsed]
    if len(set(names)) != len(names):
        raise ConfigError(where, f"source names must be unique, got {names}")
    spark = metastore_defaults(metastore_server_settings(_parse_spark(doc.get("spark") or {})),
                               [s.register for s in parsed], warehouse)
    if store is not None:  # the user's own `spark.hadoop.fs.s3a.*` settings win
        spark = {**{f"spark.hadoop.{k}": v for k, v in store.hadoop_conf().items()}, **spark}
    return LakenormConfig(warehouse=warehouse, sources=parsed, spark=spark,
                          path=Path(where) if where != "configuration" else None, object_store=store)


def _as_text(value: Any) -> Any:
    """Paths that a Python caller (not a YAML file) put in the document, as the text a file would hold."""
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, dict):
        return {key: _as_text(item) for key, item in value.items()}
    return [_as_text(item) for item in value] if isinstance(value, list) else value


def _parse_object_store(doc: dict | None, locations: list[str]) -> ObjectStore | None:
    """The `object_store` section; implied (AWS defaults) when a location is `s3a://` and it is absent."""
    if doc is None:
        return ObjectStore() if any(is_s3(loc) for loc in locations) else None
    endpoint, region = doc.get("endpoint"), doc.get("region")
    return ObjectStore(endpoint=None if endpoint is None else endpoint.rstrip("/"), region=region,
                       path_style_access=doc.get("path_style_access"))


def _parse_source(doc: dict, base_dir: Path, where: str, store: ObjectStore | None) -> SourceConfig:
    convention = doc.get("convention", DEFAULT_CONVENTION)
    landing = _landing(doc["landing"], base_dir, where, store)
    catalog = None
    if doc.get("catalog") is not None:
        catalog = (base_dir / doc["catalog"]).resolve()
        if not catalog.is_file():
            raise ConfigError(where, f"catalog file {catalog} does not exist")
    chosen = CONVENTIONS[convention]
    max_len = doc.get("max_identifier_length", chosen.default_max_identifier_length)
    if max_len < chosen.min_identifier_length:
        raise ConfigError(where, f"max_identifier_length must be at least {chosen.min_identifier_length} "
                                 f"for convention {convention!r}")
    return SourceConfig(
        name=doc["name"], landing=landing, convention=convention, catalog=catalog,
        max_identifier_length=max_len,
        max_table_nesting=doc.get("max_table_nesting", 1000),
        streams=_parse_stream_overrides(doc.get("streams") or {}, base_dir, where, convention),
        input=doc.get("input", "packages"), settle_seconds=doc.get("settle_seconds", DEFAULT_SETTLE_SECONDS),
        deletion_vectors=doc.get("deletion_vectors", False),
        schemas=_schema_file(doc, base_dir, where, None, convention),
        settings=parse_settings(doc.get("settings") or {}, f"{where}: settings"),
        schema_contract=SchemaContract(**parse_contract(doc.get("schema_contract"))),
        register=parse_register(doc.get("register"), where),
        upstream=_asset_keys(doc.get("upstream") or [], f"{where}: upstream"),
        max_loads_per_run=doc.get("max_loads_per_run", DEFAULT_MAX_LOADS_PER_RUN),
        automation=doc.get("automation", "sensor"),
    )


def _schema_file(doc: dict, base_dir: Path, where: str, stream: str | None, convention: str) -> dict[str, StreamSchema]:
    """The schemas of a `schema_file` by stream (of `stream` only, when given), validated."""
    if doc.get("schema_file") is None:
        return {}
    path = (base_dir / str(doc["schema_file"])).resolve()
    if not path.is_file():
        raise ConfigError(where, f"schema_file {path} does not exist")
    return read_schema_file(path, stream, convention)


def _parse_stream_overrides(doc: dict, base_dir: Path, where: str, convention: str) -> dict[str, StreamOverride]:
    overrides = {}
    for stream, body in doc.items():
        body, at = body or {}, f"{where}: streams.{stream}"
        pk = body.get("primary_key")
        cursor = body.get("cursor_field")
        overrides[str(stream)] = StreamOverride(
            destination_sync_mode=body.get("destination_sync_mode"),
            primary_key=None if pk is None else tuple(_path(p) for p in ([pk] if isinstance(pk, str) else pk)),
            cursor_field=None if cursor is None else _path(cursor),
            columns=parse_column_hints(body.get("columns") or {}),
            schema=_schema_file(body, base_dir, at, str(stream), convention).get(str(stream)),
            schema_contract=parse_contract(body.get("schema_contract")),
            upstream=None if body.get("upstream") is None else _asset_keys(body["upstream"], f"{at}: upstream"),
        )
    return overrides


def _parse_spark(doc: dict) -> dict[str, str]:
    conf = dict(DEFAULT_SPARK)
    for key, value in doc.items():
        key = "remote" if key == "spark.remote" else key  # Spark's own name for it
        conf[key] = str(value).lower() if isinstance(value, bool) else str(value)
    return conf


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


def _asset_keys(values: list[str | list[str]], where: str) -> AssetKeys:
    """Asset keys as lists of parts or as the UI writes them (`dlt/github_issues`)."""
    keys = tuple(tuple(v.split("/")) if isinstance(v, str) else tuple(v) for v in values)
    for key in keys:
        if not all(key):
            raise ConfigError(where, f"upstream asset key {'/'.join(key)!r} has an empty part")
    return keys


def stream_upstream(source: SourceConfig, stream: str) -> AssetKeys:
    """The asset keys that produce a stream's landing: its own `upstream`, else its source's."""
    override = source.streams.get(stream)
    return source.upstream if override is None or override.upstream is None else override.upstream


def _path(value: str | list[str]) -> tuple[str, ...]:
    """A field path: `"a"` or `["a", "b"]`."""
    return (value,) if isinstance(value, str) else tuple(value)


def stream_contract(source: SourceConfig, stream: str) -> SchemaContract:
    """The source's schema contract with the stream's own modes over it."""
    override = source.streams.get(stream)
    return replace(source.schema_contract, **override.schema_contract) if override else source.schema_contract
