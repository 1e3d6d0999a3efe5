"""Raw-table transforms (SPEC §3): file contents -> lines -> raw rows, all on the executors."""
from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from normalization_core.columns import SystemNames
from normalization_core.transform.json_text import member_text
from normalization_core.transform.keys import key128

FILE, LINE, TEXT, STREAM, ERROR = "file", "line", "text", "stream", "error"
CONTENT = "content"
KIND = "kind"
"""What a line is: `record`, `state`, `ignored` (Airbyte LOG/TRACE/...) or `quarantine`."""
STATE_JSON = "state_json"
EXTRACTED_AT = "extracted_at"
PARSED = "parsed"
"""The line's JSON as a VARIANT (NULL when it cannot be one), while the line is classified."""
READABLE = "readable"
"""The record is a JSON object that a VARIANT can hold (no duplicate keys, within its size limit)."""
LOAD_ID = "load_id"
RECORD_RAW_ID = "record_raw_id"
"""A raw id the producer gave the record (Airbyte's); NULL: derived from load ID, file and line."""
UPSTREAM_CHANGES = "upstream_changes"
"""Changes the producer already made to the record (Airbyte's `_airbyte_meta.changes`), when a kind has them:
kept in raw as `<prefix>_upstream_changes` (same struct as `_norm_meta.changes`)."""
_BOM = "\ufeff"
_AIRBYTE_MESSAGE = T.StructType([
    T.StructField("type", T.StringType()),
    T.StructField("record", T.StructType([
        T.StructField("stream", T.StringType()),
        T.StructField("data", T.StringType()),
        T.StructField("emitted_at", T.LongType()),
    ])),
    T.StructField("state", T.StringType()),
])


def split_lines(files: DataFrame) -> DataFrame:
    """`(stream, file, content)` rows of whole files -> one row per line, numbered from 1 (see `trim_terminators`)."""
    # Split once per file: an expression over the whole content next to the generator would be
    # evaluated again for every output line.
    body = F.regexp_replace(F.col(CONTENT), r"\n\z", "")
    exploded = files.where(F.col(CONTENT) != "").select(
        STREAM, FILE, F.posexplode(F.split(body, "\n")).alias("pos", TEXT))
    return trim_terminators(exploded.select(STREAM, FILE, (F.col("pos") + 1).cast("long").alias(LINE), TEXT))


def trim_terminators(lines: DataFrame) -> DataFrame:
    """Lines split at `\\n` -> lines as the SPEC reads them: a `\\r` before the `\\n` is part of the
    terminator (`\\r\\n`), and a byte-order mark opening line 1 is dropped."""
    text = F.col(TEXT)
    text = F.when(text.endswith("\r"), text.substr(F.lit(1), F.length(text) - 1)).otherwise(text)
    bom = (F.col(LINE) == 1) & text.startswith(_BOM)
    return lines.withColumn(TEXT, F.when(bom, text.substr(F.lit(2), F.length(text))).otherwise(text))


def object_error(text: Column, parsed: Column) -> Column:
    """NULL for a JSON object, else why the text is not one; `parsed` is `try_parse_json(text)`."""
    # A VARIANT holds no duplicate keys: such an object is still valid JSON, so the text is checked again.
    unparsed = F.when(F.json_object_keys(text).isNull(), F.lit("not valid JSON"))
    return (
        F.when(F.trim(text) == "", F.lit("empty line"))
        .when(parsed.isNull(), unparsed)
        .when(text.rlike(r"^\s*\{"), F.lit(None).cast("string"))
        .otherwise(F.lit("JSON value is not an object"))
    )


def _with_parsed(lines: DataFrame, text: Column) -> DataFrame:
    """Adds `PARSED` in a projection of its own, so the parse runs once however often it is used."""
    return lines.withColumn(PARSED, F.try_parse_json(text))


def record_lines(lines: DataFrame, extracted_at: Column, record_raw_id: Column | None = None) -> DataFrame:
    """`records` format: every line is a record of its file's stream (`record_raw_id`: a raw id for it)."""
    return _with_parsed(lines, F.col(TEXT)).select(
        F.lit("record").alias(KIND), STREAM, FILE, LINE, F.col(TEXT),
        object_error(F.col(TEXT), F.col(PARSED)).alias(ERROR), extracted_at.alias(EXTRACTED_AT),
        F.lit(None).cast("string").alias(STATE_JSON), F.col(PARSED).isNotNull().alias(READABLE),
        (F.lit(None).cast("string") if record_raw_id is None else record_raw_id).alias(RECORD_RAW_ID),
    )


def airbyte_lines(lines: DataFrame, extracted_at: Column) -> DataFrame:
    """`airbyte` format: RECORD messages become records of `record.stream`, STATE is kept,
    other message types are ignored and lines that are no message go to quarantine."""
    msg = F.from_json(F.col(TEXT), _AIRBYTE_MESSAGE)
    parsed = lines.select(FILE, LINE, F.col(TEXT), msg.alias("m"), F.try_parse_json(F.col(TEXT)).alias("message"))
    exact = member_text(F.col(TEXT), ("record", "data"), F.col("m.record.data"))
    parsed = parsed.select("*", object_error(F.col(TEXT), F.col("message")).alias("line_error"), exact.alias("data"))
    parsed = _with_parsed(parsed, F.col("data"))
    msg_type = F.upper(F.col("m.type"))
    kind = (
        F.when(F.col("line_error").isNotNull() | msg_type.isNull(), F.lit("quarantine"))
        .when((msg_type == "RECORD") & F.col("m.record.stream").isNotNull(), F.lit("record"))
        .when(msg_type == "RECORD", F.lit("quarantine"))
        .when(msg_type == "STATE", F.lit("state"))
        .otherwise(F.lit("ignored"))
    )
    data = F.col("data")
    is_record = kind == "record"
    error = (
        F.when(F.trim(F.col(TEXT)) == "", F.lit("empty line"))
        .when(F.col("line_error").isNotNull(), F.col("line_error"))
        .when(msg_type.isNull(), F.lit("message has no 'type'"))
        .when((msg_type == "RECORD") & ~is_record, F.lit("RECORD message has no record.stream"))
        .when(is_record & data.isNull(), F.lit("RECORD message has no record.data"))
        .when(is_record, object_error(data, F.col(PARSED)))
    )
    emitted = F.timestamp_millis(F.col("m.record.emitted_at"))
    return parsed.select(
        kind.alias(KIND),
        F.when(is_record, F.col("m.record.stream")).alias(STREAM),
        FILE, LINE,
        F.when(is_record, data).otherwise(F.col(TEXT)).alias(TEXT),
        error.alias(ERROR),
        F.coalesce(emitted, extracted_at).alias(EXTRACTED_AT),
        F.when(kind == "state", F.col("m.state")).alias(STATE_JSON),
        F.when(is_record, F.col(PARSED).isNotNull()).alias(READABLE),
        F.lit(None).cast("string").alias(RECORD_RAW_ID),
    )


def raw_id(load_id: Column, file: Column, line: Column) -> Column:
    """128-bit hex id, deterministic from load ID, file and line."""
    return key128(load_id, file, line)


def _raw_id_of(lines: DataFrame, load_id: Column) -> Column:
    derived = raw_id(load_id, F.col(FILE), F.col(LINE))
    return F.coalesce(F.col(RECORD_RAW_ID), derived) if RECORD_RAW_ID in lines.columns else derived


def raw_rows(lines: DataFrame, names: SystemNames, extra: Sequence[Column] = ()) -> DataFrame:
    """Classified lines of one stream, with their `LOAD_ID` -> the raw table's columns (then `extra`
    columns of the lines, for typing)."""
    lid = F.col(LOAD_ID)
    return lines.select(
        _raw_id_of(lines, lid).alias(names.raw_id),
        lid.alias(names.load_id),
        F.col(EXTRACTED_AT).alias(names.extracted_at),
        F.col(TEXT).alias(names.data),
        F.col(FILE).alias(names.file),
        F.col(LINE).alias(names.line),
        F.col(ERROR).alias(names.error),
        *([F.col(UPSTREAM_CHANGES).alias(names.upstream_changes)] if UPSTREAM_CHANGES in lines.columns else []),
        *extra,
    )


def raw_schema(names: SystemNames) -> T.StructType:
    """The raw table's schema (the same for every stream)."""
    return T.StructType([
        T.StructField(names.raw_id, T.StringType(), True),
        T.StructField(names.load_id, T.StringType(), True),
        T.StructField(names.extracted_at, T.TimestampType(), True),
        T.StructField(names.data, T.StringType(), True),
        T.StructField(names.file, T.StringType(), True),
        T.StructField(names.line, T.LongType(), True),
        T.StructField(names.error, T.StringType(), True),
    ])
