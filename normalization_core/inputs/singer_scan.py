"""What a Singer run holds: each file's streams and its SCHEMA messages (small metadata).

A SCHEMA message may come anywhere in a file, so every line is looked at. With a Spark session in the process
(a run, a command; classic or Spark Connect) that is one Spark job. Without one (the Dagster code location
loading its definitions or ticking its sensor, which must start no JVM: SPEC §8) Arrow streams the files and
picks the SCHEMA lines with a regex, and only those lines are parsed; the streams found that way are those
with a SCHEMA message (a stream with RECORD messages and never a SCHEMA, whose records all go to quarantine,
is left out).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from pyspark.sql import functions as F

from normalization_core.configuration.config import DEFAULT_SPARK
from normalization_core.inputs.listing import FileEntry, matching_lines
from normalization_core.io.storage import Landing, is_uri
from normalization_core.runtime.spark import build_spark_session, running_session

_SCHEMA_LINE = r'"type"\s*:\s*"[Ss][Cc][Hh][Ee][Mm][Aa]"'
"""A line that may be a SCHEMA message (parsed to be sure: a record may hold such a field too)."""
_HEADER = ("struct<type:string, stream:string, schema:string, key_properties:array<string>, "
           "bookmark_properties:array<string>>")


@dataclass(frozen=True)
class SchemaMessage:
    file: str
    order: int
    stream: str
    schema: dict
    key_properties: tuple[str, ...]
    bookmark_properties: tuple[str, ...]


@dataclass(frozen=True)
class RunScan:
    streams: dict[str, frozenset[str]]
    """Streams with RECORD or SCHEMA messages (read without a JVM: with a SCHEMA message), per file."""
    schemas: tuple[SchemaMessage, ...]


_CACHE: dict[tuple, RunScan] = {}
_FILE_SCHEMAS: dict[tuple[str, FileEntry], tuple[SchemaMessage, ...]] = {}


def scan(landing: Landing, files: list[FileEntry]) -> RunScan:
    """Streams and SCHEMA messages of `files` (cached while the files do not change)."""
    if not files:
        return RunScan({}, ())
    if running_session() is None:
        return scan_without_jvm(landing, files)
    key = (str(landing), tuple(files))
    if key not in _CACHE:
        _CACHE[key] = scan_with_spark(landing, files)
    return _CACHE[key]


def scan_without_jvm(landing: Landing, files: list[FileEntry]) -> RunScan:
    """The SCHEMA messages of `files` and, per file, the streams they name: no JVM, no Python per line.
    Each file is read once while it does not change (a sensor tick reads only new files)."""
    streams: dict[str, frozenset[str]] = {}
    schemas: list[SchemaMessage] = []
    for entry in files:
        key = (str(landing), entry)
        if key not in _FILE_SCHEMAS:
            _FILE_SCHEMAS[key] = tuple(m for number, line in matching_lines(landing, entry.path, _SCHEMA_LINE)
                                       if (m := _schema_message(entry.path, number, line)) is not None)
        streams[entry.path] = frozenset(m.stream for m in _FILE_SCHEMAS[key])
        schemas += _FILE_SCHEMAS[key]
    return RunScan(streams, tuple(schemas))


def _schema_message(file: str, order: int, line: bytes) -> SchemaMessage | None:
    """The SCHEMA message a line holds, as the Spark scan reads it; None when it holds none."""
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if not isinstance(message, dict) or str(message.get("type")).upper() != "SCHEMA" \
            or not isinstance(message.get("stream"), str) or not isinstance(message.get("schema"), dict):
        return None
    return SchemaMessage(file, order, message["stream"], message["schema"],
                         _strings(message.get("key_properties")), _strings(message.get("bookmark_properties")))


def _strings(value: object) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


def scan_with_spark(landing: Landing, files: list[FileEntry]) -> RunScan:
    spark = running_session() or build_spark_session(dict(DEFAULT_SPARK))
    paths = [str(landing / f.path) for f in files]
    m = F.from_json(F.col("value"), _HEADER)
    lines = spark.read.text(paths).select(F.input_file_name().alias("path"), m.alias("m"))
    lines = lines.where(F.upper("m.type").isin("SCHEMA", "RECORD") & F.col("m.stream").isNotNull())
    is_schema = F.upper("m.type") == "SCHEMA"
    rows = lines.select(
        "path", F.col("m.stream").alias("stream"), F.when(is_schema, F.monotonically_increasing_id()).alias("order"),
        F.when(is_schema, F.col("m.schema")).alias("schema"), F.when(is_schema, F.col("m.key_properties")).alias("kp"),
        F.when(is_schema, F.col("m.bookmark_properties")).alias("bp"),
    ).distinct().collect()  # metadata: (file, stream) pairs and the SCHEMA messages
    relative = {str(landing / f.path): f.path for f in files}
    streams: dict[str, set[str]] = {f.path: set() for f in files}
    schemas = []
    for row in rows:
        file = relative.get(_location(row["path"]), row["path"])
        streams.setdefault(file, set()).add(row["stream"])
        if row["order"] is not None and row["schema"]:
            schemas.append(SchemaMessage(file, row["order"], row["stream"], json.loads(row["schema"]),
                                         tuple(row["kp"] or ()), tuple(row["bp"] or ())))
    schemas.sort(key=lambda s: (s.file, s.order))
    return RunScan({f: frozenset(s) for f, s in streams.items()}, tuple(schemas))


def _location(read_path: str) -> str:
    """A path as Spark reports it (`file:/...` URL-quoted, or an `s3a://` URI) as the landing spells it."""
    text = unquote(read_path)
    return text if is_uri(text) and not text.startswith("file:") else str(Path(text.removeprefix("file:")))
