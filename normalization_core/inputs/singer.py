"""The `singer` input kind: files of Singer messages (SCHEMA, RECORD, STATE), one file or folder per run.

A file at the top of the landing is a run (load ID: its name, made a valid load ID); a folder there is a
run of all files under it (load ID: the folder's name). SCHEMA messages give the streams' JSON Schema,
primary key (`key_properties`) and cursor (`bookmark_properties`) when the source has no catalog.
"""
from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from normalization_core.configuration.config import SourceConfig
from normalization_core.schema.stream_settings import StreamSettings
from normalization_core.inputs.base import FileInput, Grouping, Member, from_ms, valid_load_id
from normalization_core.inputs.listing import FileEntry, list_files
from normalization_core.inputs.singer_scan import scan
from normalization_core.io.load_packages import LoadPackage
from normalization_core.io.reader import read_package_lines
from normalization_core.transform import raw as R
from normalization_core.transform.json_text import member_text

_MESSAGE = "struct<type:string, stream:string, record:string, time_extracted:string, value:string>"


def run_id(entry: FileEntry) -> str:
    """The run of a file: its top folder, or the file itself (name without its suffixes)."""
    top = entry.parts[0]
    return valid_load_id(top if len(entry.parts) > 1 else top.split(".")[0])


class SingerFiles(FileInput):
    name = "singer"
    suffixes = (".jsonl", ".jsonl.gz", ".singer", ".singer.gz")

    def members(self, source: SourceConfig, files: list[FileEntry]) -> Grouping:
        grouping = Grouping()
        streams = scan(source.landing, [f for f in files if f.size]).streams
        for entry in files:
            if entry.size:
                grouping.members.append(Member(entry, run_id(entry), None, "singer", from_ms(entry.modified_ms)))
        grouping.members = [m for m in grouping.members if streams.get(m.file.path) is not None]
        return grouping

    def package(self, source: SourceConfig, load_id: str, members: Sequence[Member]) -> LoadPackage:
        streams = scan(source.landing, [m.file for m in members]).streams
        names = sorted({s for m in members for s in streams.get(m.file.path, ())})
        return LoadPackage(
            load_id=load_id, created_at=min(m.created_at for m in members), source=source.name, format="singer",
            folder=source.landing, stream_files={s: () for s in names}, files=tuple(m.file.path for m in members),
            entries=tuple(m.file for m in members))

    def landed_streams(self, config, source: SourceConfig) -> set[str]:
        files = [f for f in list_files(source.landing, self.suffixes) if f.size]
        return {s for found in scan(source.landing, files).streams.values() for s in found}

    def catalog(self, source: SourceConfig) -> dict[str, StreamSettings]:
        """The last SCHEMA message of each stream (files in path order)."""
        files = [f for f in list_files(source.landing, self.suffixes) if f.size]
        settings = {}
        for message in scan(source.landing, files).schemas:
            settings[message.stream] = StreamSettings(
                name=message.stream, json_schema=message.schema,
                destination_sync_mode="append_dedup" if message.key_properties else "append",
                cursor_field=message.bookmark_properties[:1],
                primary_key=tuple((k,) for k in message.key_properties))
        return settings

    def classify(self, spark: SparkSession, package: LoadPackage) -> DataFrame:
        return singer_lines(read_package_lines(spark, package), package)


def singer_lines(lines: DataFrame, package: LoadPackage) -> DataFrame:
    """RECORD -> record of its stream (after that stream's SCHEMA, else quarantine), STATE -> state,
    SCHEMA and other messages ignored, lines that are no message -> quarantine."""
    mtimes = F.create_map(*[x for e in package.entries for x in (F.lit(e.path), F.lit(from_ms(e.modified_ms)))])
    message = F.from_json(F.col(R.TEXT), _MESSAGE)
    parsed = lines.select(R.FILE, R.LINE, R.TEXT, R.BYTES, message.alias("m"),
                          F.try_parse_json(F.col(R.TEXT)).alias("message"))
    parsed = parsed.withColumn("record", member_text(F.col(R.TEXT), ("record",), F.col("m.record")))
    msg_type = F.upper(F.col("m.type"))
    seen = Window.partitionBy(F.col("m.stream")).orderBy(R.FILE, R.LINE).rowsBetween(Window.unboundedPreceding, 0)
    parsed = parsed.select("*", R.object_error(F.col(R.TEXT), F.col("message")).alias("line_error"),
                           F.max(F.when(msg_type == "SCHEMA", F.lit(1))).over(seen).alias("has_schema"))
    parsed = parsed.withColumn(R.PARSED, R.parsed_record(F.col("record")))
    record = (msg_type == "RECORD") & F.col("m.stream").isNotNull() & F.col("record").isNotNull()
    kind = (F.when(F.col("line_error").isNotNull() | msg_type.isNull(), F.lit("quarantine"))
            .when(record & F.col("has_schema").isNotNull(), F.lit("record"))
            .when(msg_type == "RECORD", F.lit("quarantine"))
            .when(msg_type == "STATE", F.lit("state"))
            .otherwise(F.lit("ignored")))
    is_record = kind == "record"
    error = (F.when(F.col("line_error").isNotNull(), F.col("line_error"))
             .when(msg_type.isNull(), F.lit("message has no 'type'"))
             .when((msg_type == "RECORD") & ~record, F.lit("RECORD message has no stream or record"))
             .when((msg_type == "RECORD") & ~is_record,
                   F.concat(F.lit("RECORD before the SCHEMA of stream "), F.col("m.stream")))
             .when(is_record, R.object_error(F.col("record"), F.col(R.PARSED))))
    extracted = F.coalesce(F.try_to_timestamp(F.col("m.time_extracted")), F.element_at(mtimes, F.col(R.FILE)))
    return parsed.select(
        kind.alias(R.KIND), F.when(is_record, F.col("m.stream")).alias(R.STREAM), R.FILE, R.LINE,
        F.when(is_record, F.col("record")).otherwise(F.col(R.TEXT)).alias(R.TEXT), R.BYTES, error.alias(R.ERROR),
        extracted.alias(R.EXTRACTED_AT), F.when(kind == "state", F.col("m.value")).alias(R.STATE_JSON),
        F.when(is_record, F.col(R.PARSED).isNotNull()).alias(R.READABLE),
        F.lit(None).cast("string").alias(R.RECORD_RAW_ID))


