"""What a Singer run holds, read with Spark: each file's streams and its SCHEMA messages (small metadata)."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from normalization_core.config import DEFAULT_SPARK
from normalization_core.io.spark import build_spark_session
from normalization_core.io.storage import Landing, is_uri
from normalization_core.inputs.listing import FileEntry

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
    """Streams with RECORD or SCHEMA messages, per file."""
    schemas: tuple[SchemaMessage, ...]


_CACHE: dict[tuple, RunScan] = {}


def scan(landing: Landing, files: list[FileEntry]) -> RunScan:
    """Streams and SCHEMA messages of `files` (one Spark job; cached while the files do not change)."""
    key = (str(landing), tuple(files))
    if not files:
        return RunScan({}, ())
    if key not in _CACHE:
        _CACHE[key] = _scan(landing, files)
    return _CACHE[key]


def _scan(landing: Landing, files: list[FileEntry]) -> RunScan:
    spark = SparkSession.getActiveSession() or build_spark_session(dict(DEFAULT_SPARK))
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
