"""The schema versions table (`_norm_versions`, SPEC §3, §5.3): one row per distinct schema of a stream.

Under the `dlt` convention (`_dlt_version`) a row also has dlt's `engine_version` and `schema_name` (the
stream, whose schema is versioned on its own), and the schema is JSON text as dlt stores it.

A row is added only when a stream's schema hash is new for it, so re-runs add nothing; two runs racing to
add one version conflict in Delta, and the loser re-reads and finds it (or takes the next number).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import yaml
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from normalization_core import columns as C
from normalization_core.io.delta import (
    MAX_ATTEMPTS,
    is_delta_table,
    merge_sql,
    read_table,
    temp_view,
    with_conflict_retry,
)
from normalization_core.io.local_rows import local_rows
from normalization_core.io.storage import open_delta_table
from normalization_core.naming.conventions import system_names
from normalization_core.schema import StreamSchema, schema_document, schema_hash
from normalization_core.transform.sql_text import table_ref

VERSIONS_SCHEMA = T.StructType([
    T.StructField(C.VERSIONS_STREAM, T.StringType()),
    T.StructField(C.VERSIONS_VERSION, T.LongType()),
    T.StructField(C.VERSIONS_HASH, T.StringType()),
    T.StructField(C.VERSIONS_SCHEMA, T.StringType()),
    T.StructField(C.VERSIONS_INSERTED_AT, T.TimestampType()),
])
DLT_VERSIONS_SCHEMA = T.StructType([
    *VERSIONS_SCHEMA.fields,
    T.StructField(C.VERSIONS_ENGINE_VERSION, T.LongType()),
    T.StructField(C.VERSIONS_SCHEMA_NAME, T.StringType()),
])
"""`_dlt_version`: dlt's columns (version, engine_version, inserted_at, schema_name, version_hash, schema)."""


@dataclass(frozen=True)
class StoredVersion:
    stream: str
    version: int
    version_hash: str
    schema: StreamSchema


def schema_yaml(schema: StreamSchema) -> str:
    return yaml.safe_dump(schema_document(schema), sort_keys=False, allow_unicode=True)


def _is_dlt(schema: StreamSchema) -> bool:
    return system_names(schema["convention"]).dlt_system_tables


def _version_row(spark: SparkSession, schema: StreamSchema, version: int, version_hash: str) -> DataFrame:
    now = datetime.now(timezone.utc)
    if not _is_dlt(schema):
        row = (schema["stream"], version, version_hash, schema_yaml(schema), now)
        return local_rows(spark, [row], VERSIONS_SCHEMA)
    text = json.dumps(schema_document(schema), ensure_ascii=False)
    row = (schema["stream"], version, version_hash, text, now, C.DLT_ENGINE_VERSION, schema["stream"])
    return local_rows(spark, [row], DLT_VERSIONS_SCHEMA)


def _parse_schema(text: str) -> Any:
    """A stored schema: JSON (`dlt` convention) or YAML."""
    return json.loads(text) if text.startswith("{") else yaml.safe_load(text)


def latest_versions(spark: SparkSession, path: str) -> dict[str, StoredVersion]:
    """The newest stored schema of each stream (one small row per stream, read on the driver)."""
    if not is_delta_table(spark, path):
        return {}
    table = read_table(spark, path)
    newest = table.groupBy(C.VERSIONS_STREAM).agg(F.max(C.VERSIONS_VERSION).alias(C.VERSIONS_VERSION))
    rows = table.join(newest, [C.VERSIONS_STREAM, C.VERSIONS_VERSION]).collect()  # one schema per stream: metadata
    return {r[C.VERSIONS_STREAM]: _stored(r) for r in rows}


def latest_versions_without_spark(path: str, storage_options: dict[str, str] | None = None) -> dict[str, StoredVersion]:
    """`latest_versions` of a table (local or `s3a://`) read with delta-rs: loading the Dagster code location
    starts no JVM (SPEC §8). The table holds one short row per schema version: metadata."""
    columns = [C.VERSIONS_STREAM, C.VERSIONS_VERSION, C.VERSIONS_HASH, C.VERSIONS_SCHEMA]
    newest: dict[str, dict] = {}
    for row in _version_rows(path, storage_options, columns):
        if row[C.VERSIONS_VERSION] > newest.get(row[C.VERSIONS_STREAM], {}).get(C.VERSIONS_VERSION, 0):
            newest[row[C.VERSIONS_STREAM]] = row
    return {stream: _stored(row) for stream, row in newest.items()}


def _stored(row: Any) -> StoredVersion:
    return StoredVersion(row[C.VERSIONS_STREAM], row[C.VERSIONS_VERSION], row[C.VERSIONS_HASH],
                         _parse_schema(row[C.VERSIONS_SCHEMA]))


def record_version(spark: SparkSession, path: str, schema: StreamSchema,
                   storage_options: dict[str, str] | None = None) -> StoredVersion:
    """The stored version of `schema`, added as the stream's next version when its hash is new.
    `storage_options`: delta-rs options to read an `s3a://` table (`SourceTables.storage_options`)."""
    stream, version_hash = schema["stream"], schema_hash(schema)

    def attempt() -> tuple[StoredVersion, bool]:
        known = _known_versions(path, [stream], storage_options)
        if (stream, version_hash) in known:
            return StoredVersion(stream, known[stream, version_hash], version_hash, schema), False
        version = max(known.values(), default=0) + 1
        row = _version_row(spark, schema, version, version_hash)
        if not is_delta_table(spark, path):
            # Not `append`: a table another run created since the check above would get a second row for the
            # version; on an existing table this fails (a race), and the retry finds the version or MERGEs.
            row.write.format("delta").mode("error").save(path)  # (Connect's client knows no "errorifexists")
        else:
            same = (f"t.{C.VERSIONS_STREAM} = s.{C.VERSIONS_STREAM} AND (t.{C.VERSIONS_HASH} = s.{C.VERSIONS_HASH}"
                    f" OR t.{C.VERSIONS_VERSION} = s.{C.VERSIONS_VERSION})")
            with temp_view(row) as view:
                merge_sql(spark, f"MERGE INTO {table_ref(path)} AS t USING {view} AS s ON {same} "
                                 "WHEN NOT MATCHED THEN INSERT *")
        return StoredVersion(stream, version, version_hash, schema), True

    for _ in range(MAX_ATTEMPTS):
        stored, inserted = with_conflict_retry(attempt, path)
        if not inserted or _known_versions(path, [stream], storage_options).get((stream, version_hash)) == stored.version:
            return stored
        # a racing run took this version number first: store the schema under the next one
    raise RuntimeError(f"could not store a schema version of stream {stream!r} in {path}")


def record_versions(spark: SparkSession, path: str, schemas: list[StreamSchema],
                    storage_options: dict[str, str] | None = None) -> list[StoredVersion]:
    """`record_version` of each schema; schemas stored before are found with one read of the table."""
    known = _known_versions(path, [s["stream"] for s in schemas], storage_options)
    stored = []
    for schema in schemas:
        stream, version_hash = schema["stream"], schema_hash(schema)
        version = known.get((stream, version_hash))
        stored.append(StoredVersion(stream, version, version_hash, schema) if version is not None
                      else record_version(spark, path, schema, storage_options))
    return stored


def _known_versions(path: str, streams: list[str], storage_options: dict[str, str] | None
                    ) -> dict[tuple[str, str], int]:
    """(stream, version_hash) -> version of the streams, read with delta-rs: no Spark job on every pass."""
    wanted = set(streams)
    return {(r[C.VERSIONS_STREAM], r[C.VERSIONS_HASH]): r[C.VERSIONS_VERSION]
            for r in _version_rows(path, storage_options, [C.VERSIONS_STREAM, C.VERSIONS_HASH, C.VERSIONS_VERSION])
            if r[C.VERSIONS_STREAM] in wanted}


def _version_rows(path: str, storage_options: dict[str, str] | None, columns: list[str]) -> list[dict]:
    """The `columns` of every row of the table's newest version, read with delta-rs (none when there is no
    table). One short row per schema version: metadata."""
    table = open_delta_table(path, storage_options)
    return [] if table is None else table.to_pyarrow_table(columns=columns).to_pylist()
