"""The `airbyte_destination` input kind: files of Airbyte's S3 / local-JSON destinations (SPEC §2.4).

Layout (Airbyte's default S3 path format `${NAMESPACE}/${STREAM_NAME}/${YEAR}_${MONTH}_${DAY}_${EPOCH}_`
followed by the part number and `.jsonl[.gz]`): the stream is a file's folder, the namespace the folder above.
One unit per sync: V2 files by `_airbyte_meta.sync_id` of their first record, V1 files by the epoch in their name.
"""
from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from normalization_core.configuration.config import SourceConfig
from normalization_core.inputs.base import FileInput, Grouping, Member, from_ms, valid_load_id
from normalization_core.inputs.listing import FileEntry, list_files, read_head
from normalization_core.io.load_packages import LoadPackage, RejectedPackage
from normalization_core.io.reader import read_package_lines
from normalization_core.io.storage import Landing
from normalization_core.transform import raw as R
from normalization_core.transform.json_text import member_text, object_without

_EPOCH = re.compile(r"(?:^|_)(\d{10,13})_(?:\d+_)?\d*\.jsonl(?:\.gz)?$")
V2, V1 = "airbyte_v2", "airbyte_v1"
_V2_RECORD = ("struct<_airbyte_raw_id:string, _airbyte_extracted_at:long, _airbyte_generation_id:long, "
              "_airbyte_meta:struct<sync_id:long, changes:array<struct<field:string, change:string, reason:string>>>, "
              "_airbyte_data:string>")
_CHANGES = "array<struct<field:string, change:string, reason:string>>"
_V1_RECORD = "struct<_airbyte_ab_id:string, _airbyte_emitted_at:long, _airbyte_data:string>"


def record_version(head: dict) -> str | None:
    """V2 (`_airbyte_raw_id`, `_airbyte_meta`, ...) or V1 (`_airbyte_ab_id`, `_airbyte_emitted_at`) from a record."""
    if {"_airbyte_raw_id", "_airbyte_extracted_at", "_airbyte_meta"} & set(head):
        return V2
    if {"_airbyte_ab_id", "_airbyte_emitted_at"} & set(head):
        return V1
    return None


def file_epoch(name: str) -> int | None:
    found = _EPOCH.search(name)
    return int(found.group(1)) if found else None


class AirbyteDestination(FileInput):
    name = "airbyte_destination"

    def members(self, source: SourceConfig, files: list[FileEntry]) -> Grouping:
        grouping = Grouping()
        reference = _stream_versions(source.landing)
        for entry in files:
            if len(entry.parts) < 2 or entry.size == 0:
                continue  # not in a stream folder, or nothing written yet
            head = _head(source.landing, entry)
            version = record_version(head) if head is not None else None
            stream = entry.parts[-2]
            epoch = file_epoch(entry.name)
            load_id = _load_id(version, head, epoch, entry)
            problem = _problem(head, version, reference.get(stream), stream)
            if problem:
                grouping.rejected.append(RejectedPackage(load_id, Path(entry.path), f"file {entry.path!r}: {problem}"))
                continue
            created = from_ms(epoch if epoch and epoch > 10**12 else (epoch or 0) * 1000 or entry.modified_ms)
            grouping.members.append(Member(entry, load_id, stream, version, created))
        return grouping

    def package(self, source: SourceConfig, load_id: str, members: Sequence[Member]) -> LoadPackage:
        streams: dict[str, list[str]] = {}
        for m in members:
            streams.setdefault(m.stream, []).append(m.file.path)  # type: ignore[arg-type]
        return LoadPackage(
            load_id=load_id, created_at=min(m.created_at for m in members), source=source.name, format=V2,
            folder=source.landing, stream_files={s: tuple(f) for s, f in streams.items()},
            entries=tuple(m.file for m in members), hints={m.stream: m.format for m in members})

    def classify(self, spark: SparkSession, package: LoadPackage) -> DataFrame:
        lines = read_package_lines(spark, package)
        created = F.lit(package.created_at).cast("timestamp")
        v2 = [s for s, v in package.hints.items() if v == V2]
        return v2_lines(lines.where(F.col(R.STREAM).isin(v2)), created).unionByName(
            v1_lines(lines.where(~F.col(R.STREAM).isin(v2)), created))


def _head(landing: Landing, entry: FileEntry) -> dict | None:
    text = read_head(landing, entry.path)
    try:
        head = json.loads(text) if text else None
    except json.JSONDecodeError:
        return None
    return head if isinstance(head, dict) else None


def _load_id(version: str | None, head: dict | None, epoch: int | None, entry: FileEntry) -> str:
    sync_id = ((head or {}).get("_airbyte_meta") or {}).get("sync_id") if version == V2 else None
    if sync_id is not None:
        return valid_load_id(str(sync_id))
    return valid_load_id(str(epoch) if epoch else Path(entry.name).name.split(".")[0])


def _problem(head: dict | None, version: str | None, expected: str | None, stream: str) -> str | None:
    if head is None:
        return "its first line is not a JSON object (unreadable, truncated or not Airbyte records); not read"
    if version is None:
        return "its first record has no Airbyte columns (_airbyte_raw_id / _airbyte_ab_id); not read"
    if expected and version != expected:
        return (f"a {version[-2:].upper()} file in the folder of stream {stream!r}, whose records are "
                f"{expected[-2:].upper()}; not read: move it to a folder of its own")
    return None


def _stream_versions(landing: Landing) -> dict[str, str]:
    """Each stream folder's record version: that of its first file (files are named by date and epoch)."""
    versions: dict[str, str] = {}
    for entry in list_files(landing, AirbyteDestination.suffixes):
        stream = entry.parts[-2] if len(entry.parts) >= 2 else None
        if stream and stream not in versions and entry.size:
            head = _head(landing, entry)
            version = record_version(head) if head else None
            if version:
                versions[stream] = version
    return versions


def _common(lines: DataFrame, fmt: str) -> DataFrame:
    return lines.select(R.STREAM, R.FILE, R.LINE, R.TEXT, R.BYTES, F.from_json(F.col(R.TEXT), fmt).alias("r"),
                        F.try_parse_json(F.col(R.TEXT)).alias("line_json"))


def v2_lines(lines: DataFrame, created) -> DataFrame:
    """V2 records: `_airbyte_data`, else the fields at the root (root-level flattening) are the record."""
    parsed = _common(lines, _V2_RECORD)
    root = F.map_filter(F.from_json(F.col(R.TEXT), "map<string,variant>"), lambda k, _: ~k.startswith("_airbyte_"))
    flattened = F.coalesce(object_without(F.col(R.TEXT), "_airbyte_"), F.to_json(root))
    data = F.coalesce(_exact_data(parsed), flattened)
    return _classified(parsed, data, F.col("r._airbyte_raw_id"), F.col("r._airbyte_extracted_at"), created,
                       "Airbyte V2 record has no _airbyte_raw_id", F.col("r._airbyte_meta.changes"))


def v1_lines(lines: DataFrame, created) -> DataFrame:
    """V1 records: `_airbyte_data` is the record."""
    parsed = _common(lines, _V1_RECORD)
    return _classified(parsed, _exact_data(parsed), F.col("r._airbyte_ab_id"), F.col("r._airbyte_emitted_at"),
                       created, "Airbyte V1 record has no _airbyte_ab_id or _airbyte_data", F.lit(None).cast(_CHANGES))


def _exact_data(parsed: DataFrame) -> Column:
    """`_airbyte_data` as the destination wrote it (see `json_text`)."""
    return member_text(F.col(R.TEXT), ("_airbyte_data",), F.col("r._airbyte_data"))


def _classified(parsed: DataFrame, data, raw_id, extracted_ms, created, missing: str, changes) -> DataFrame:
    line_error = R.object_error(F.col(R.TEXT), F.col("line_json"))
    parsed = parsed.select("*", line_error.alias("line_error"), data.alias("data"), raw_id.alias("rid"))
    parsed = parsed.withColumn(R.PARSED, R.parsed_record(F.col("data")))
    bad = F.col("line_error").isNotNull() | F.col("rid").isNull() | F.col("data").isNull()
    is_record = ~bad
    error = (F.when(F.col("line_error").isNotNull(), F.col("line_error"))
             .when(bad, F.lit(missing))
             .otherwise(R.object_error(F.col("data"), F.col(R.PARSED))))
    return parsed.select(
        F.when(is_record, F.lit("record")).otherwise(F.lit("quarantine")).alias(R.KIND),
        F.when(is_record, F.col(R.STREAM)).alias(R.STREAM), R.FILE, R.LINE,
        F.when(is_record, F.col("data")).otherwise(F.col(R.TEXT)).alias(R.TEXT), R.BYTES,
        error.alias(R.ERROR),
        F.coalesce(F.timestamp_millis(extracted_ms), created).alias(R.EXTRACTED_AT),
        F.lit(None).cast("string").alias(R.STATE_JSON),
        F.when(is_record, F.col(R.PARSED).isNotNull()).alias(R.READABLE),
        F.when(is_record, F.col("rid")).alias(R.RECORD_RAW_ID),
        changes.alias(R.UPSTREAM_CHANGES),
    )
