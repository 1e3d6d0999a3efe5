"""Raw-table transforms (SPEC §3): file contents -> lines -> raw rows, all on the executors."""
from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from normalization_core.columns import SystemNames
from normalization_core.transform.json_text import member_text
from normalization_core.transform.keys import key128
from normalization_core.transform.text_repair import (
    first_invalid_offset,
    holds_lone_surrogate,
    invalid_bytes,
    repaired_text,
    without_lone_surrogates,
)

FILE, LINE, TEXT, STREAM, ERROR = "file", "line", "text", "stream", "error"
CONTENT = "content"
BYTES = "bytes"
"""The line's exact bytes where they are not UTF-8 (its text then holds U+FFFD for them), else NULL."""
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
RAW_ID = "raw_id"
"""The line's raw id, where the lines carry it (`with_raw_ids`)."""
NOT_UTF8 = "line bytes not UTF-8 at offset "
"""How the raw error of a line whose bytes are not UTF-8 starts (then the 0-based offset of the first bad byte);
such a line is still typed (from its text, U+FFFD in place of those bytes) when it is a JSON object."""
TEXT_AFTER_OBJECT = "not valid JSON: text after the object"
"""A line holding a JSON object and more (another object, a stray character): not typed, raw keeps it."""
UPSTREAM_CHANGES = "upstream_changes"
"""Changes the producer already made to the record (Airbyte's `_airbyte_meta.changes`), when a kind has them:
kept in raw as `<prefix>_upstream_changes` (same struct as `_norm_meta.changes`)."""
_BOM = "\ufeff"
_BYTE_CHARS = "ISO-8859-1"
"""The charset whose characters are the 256 byte values: text in it round-trips any bytes."""
_VALID_FILE, _VALID, _REPAIRED = "#valid_file", "#valid", "#repaired_text"
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
    """`(stream, file, content)` rows of whole files -> one row per line, numbered from 1 (see `line_texts`).

    A file whose bytes are not all UTF-8 is split as ISO-8859-1 text (one character per byte, `\\n` the same
    byte), so that each of its lines keeps its exact bytes: the regular expressions of a split read text as Java
    strings, which would turn such bytes into U+FFFD before they could be kept."""
    # Split once per file: an expression over the whole content next to the generator would be
    # evaluated again for every output line.
    valid = files.where(F.col(CONTENT) != "").select(
        STREAM, FILE, F.col(CONTENT), F.is_valid_utf8(F.col(CONTENT)).alias(_VALID_FILE))
    content = F.when(F.col(_VALID_FILE), F.col(CONTENT)).otherwise(F.decode(F.col(CONTENT).cast("binary"), _BYTE_CHARS))
    body = F.regexp_replace(content, r"\n\z", "")
    exploded = valid.select(STREAM, FILE, _VALID_FILE, F.posexplode(F.split(body, "\n")).alias("pos", TEXT))
    text = F.when(F.col(_VALID_FILE), F.col(TEXT)).otherwise(F.encode(F.col(TEXT), _BYTE_CHARS).cast("string"))
    return line_texts(exploded.select(STREAM, FILE, (F.col("pos") + 1).cast("long").alias(LINE), text.alias(TEXT)))


def line_texts(lines: DataFrame) -> DataFrame:
    """Lines split at `\\n`, as read (their bytes unchecked) -> lines as the SPEC reads them: a `\\r` before the
    `\\n` is part of the terminator (`\\r\\n`), a byte-order mark opening line 1 is dropped, and bytes that are
    not UTF-8 are replaced by U+FFFD, the line's exact bytes (without terminator and mark) kept in `BYTES`."""
    read, valid = F.col(TEXT), F.col(_VALID)
    cr, bom = read.endswith("\r"), (F.col(LINE) == 1) & read.startswith(_BOM)  # (bytes compared: no decoding)
    line_bytes = invalid_bytes(read, valid)
    start = F.when(bom, F.lit(len(_BOM.encode("utf-8")) + 1)).otherwise(F.lit(1))
    kept = F.octet_length(line_bytes) - start + 1 - F.when(cr, F.lit(1)).otherwise(F.lit(0))
    checked = lines.select("*", F.is_valid_utf8(read).alias(_VALID)).select(  # (each line checked once)
        "*", repaired_text(read, valid).alias(_REPAIRED), F.substring(line_bytes, start, kept).alias(BYTES))
    text = F.col(_REPAIRED)
    text = F.when(cr, text.substr(F.lit(1), F.length(text) - 1)).otherwise(text)
    text = F.when(bom, text.substr(F.lit(2), F.length(text))).otherwise(text)
    return checked.withColumn(TEXT, text).drop(_VALID, _REPAIRED)


def object_error(text: Column, parsed: Column | None = None) -> Column:
    """NULL for a JSON object, else why the text is not one; `parsed`: `try_parse_json(text)`, where it is made
    already. A line holding one object is told by one scan of its text (`_one_value`); only the other lines are
    parsed further, to say why."""
    # A VARIANT holds no duplicate keys: such an object is still valid JSON, so the text is checked again.
    variant = parsed_record(text) if parsed is None else parsed
    one_object = text.rlike(r"^\s*\{") & _one_value(text)
    return (
        F.when(one_object, F.lit(None).cast("string"))
        .when(F.trim(text) == "", F.lit("empty line"))
        .when(variant.isNull() & F.json_object_keys(text).isNull(), F.lit("not valid JSON"))
        .when(~text.rlike(r"^\s*\{"), F.lit("JSON value is not an object"))
        .when(~_one_value(text), F.lit(TEXT_AFTER_OBJECT))
    )


def _one_value(text: Column) -> Column:
    """The text holds one JSON value and nothing after it. Spark's JSON parsers read the first value and ignore the
    rest (`{"a": 1} {"b": 2}`, two records missing their newline, would lose the second): as the first element of
    an array with a second one, only a text holding one value leaves an array of two."""
    return F.coalesce(F.json_array_length(F.concat(F.lit("["), text, F.lit(",0]"))) == 2, F.lit(False))


VARIANT_CHECKED_BYTES = 1 << 20
"""A record longer than this is parsed into a VARIANT to learn whether one holds it (its 16 MiB limit counts
the VARIANT's bytes, which a short text cannot reach)."""


def variant_holds(text: Column) -> Column:
    """A JSON object's text (`object_error` NULL) that a VARIANT can hold. A VARIANT refuses duplicate keys,
    single-quoted strings (which Spark's JSON reader accepts) and values past its size limit: the keys of the
    object are compared, and only a text holding a single quote, or long, is parsed into a VARIANT to tell. (A
    key twice in a nested object is read as Spark's JSON reader reads it: the last value.)"""
    repaired = without_lone_surrogates(text)
    keys = F.json_object_keys(repaired)
    doubtful = text.contains("'") | (F.octet_length(text) > VARIANT_CHECKED_BYTES)
    distinct = F.coalesce(F.size(F.array_distinct(keys)) == F.size(keys), F.lit(False))  # (no object: no keys)
    return F.when(doubtful, parsed_record(text).isNotNull()).otherwise(distinct)


def parsed_record(text: Column) -> Column:
    """The record's JSON text as a VARIANT, each lone surrogate escape read as U+FFFD (`text_repair`); NULL when
    a VARIANT cannot hold it."""
    return F.try_parse_json(without_lone_surrogates(text))


def _with_parsed(lines: DataFrame, text: Column) -> DataFrame:
    """Adds `PARSED` in a projection of its own, so the parse runs once however often it is used."""
    return lines.withColumn(PARSED, parsed_record(text))


def record_lines(lines: DataFrame, extracted_at: Column, record_raw_id: Column | None = None) -> DataFrame:
    """`records` format: every line is a record of its file's stream (`record_raw_id`: a raw id for it)."""
    checked = lines.select("*", object_error(F.col(TEXT)).alias(ERROR))  # (its scan made once, used twice)
    return checked.select(
        F.lit("record").alias(KIND), STREAM, FILE, LINE, F.col(TEXT), BYTES, ERROR, extracted_at.alias(EXTRACTED_AT),
        F.lit(None).cast("string").alias(STATE_JSON),
        F.when(F.col(ERROR).isNull(), variant_holds(F.col(TEXT))).otherwise(F.lit(False)).alias(READABLE),
        (F.lit(None).cast("string") if record_raw_id is None else record_raw_id).alias(RECORD_RAW_ID),
    )


def airbyte_lines(lines: DataFrame, extracted_at: Column) -> DataFrame:
    """`airbyte` format: RECORD messages become records of `record.stream`, STATE is kept,
    other message types are ignored and lines that are no message go to quarantine."""
    msg = F.from_json(F.col(TEXT), _AIRBYTE_MESSAGE)
    parsed = lines.select(FILE, LINE, F.col(TEXT), BYTES, msg.alias("m"),
                          F.try_parse_json(F.col(TEXT)).alias("message"))
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
        F.when(is_record, data).otherwise(F.col(TEXT)).alias(TEXT), BYTES,
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
    if RAW_ID in lines.columns:
        return F.col(RAW_ID)
    derived = raw_id(load_id, F.col(FILE), F.col(LINE))
    return F.coalesce(F.col(RECORD_RAW_ID), derived) if RECORD_RAW_ID in lines.columns else derived


def with_raw_ids(lines: DataFrame) -> DataFrame:
    """Classified lines with their `LOAD_ID` -> the same with each line's raw id (`RAW_ID`), so that lines cached
    once give it to the raw table and to every typed table's keys without hashing again."""
    return lines.withColumn(RAW_ID, _raw_id_of(lines, F.col(LOAD_ID)))


def raw_rows(lines: DataFrame, names: SystemNames, extra: Sequence[Column] = ()) -> DataFrame:
    """Classified lines of one stream, with their `LOAD_ID` -> the raw table's columns (then `extra`
    columns of the lines, for typing). A line's bytes are in `data_bytes` only where they are not UTF-8, and its
    error then says where (`NOT_UTF8`), after why it is not a record if it is not."""
    lid = F.col(LOAD_ID)
    line_bytes = F.col(BYTES) if BYTES in lines.columns else F.lit(None).cast("binary")
    return lines.select(
        _raw_id_of(lines, lid).alias(names.raw_id),
        lid.alias(names.load_id),
        F.col(EXTRACTED_AT).alias(names.extracted_at),
        F.col(TEXT).alias(names.data),
        F.col(FILE).alias(names.file),
        F.col(LINE).alias(names.line),
        F.when(line_bytes.isNull(), F.col(ERROR)).otherwise(
            F.concat_ws("; ", F.col(ERROR), _not_utf8(line_bytes, names))).alias(names.error),
        *([F.col(UPSTREAM_CHANGES).alias(names.upstream_changes)] if UPSTREAM_CHANGES in lines.columns else []),
        line_bytes.alias(names.data_bytes),
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
        T.StructField(names.data_bytes, T.BinaryType(), True),
    ])


def _not_utf8(line_bytes: Column, names: SystemNames) -> Column:
    offset = first_invalid_offset(line_bytes).cast("string")
    return F.concat(F.lit(NOT_UTF8), offset, F.lit(f" (replaced by U+FFFD; the exact bytes are in {names.data_bytes})"))


def typed_line(names: SystemNames) -> Column:
    """A raw row whose record is typed: a JSON object, its bytes UTF-8 or repaired (its error only `NOT_UTF8`)."""
    error = F.col(names.error)
    return error.isNull() | error.startswith(NOT_UTF8)


def repaired_line(lines: DataFrame) -> Column:
    """`repaired_record` of classified lines."""
    not_utf8 = F.col(BYTES).isNotNull() if BYTES in lines.columns else F.lit(False)
    return not_utf8 | holds_lone_surrogate(F.col(TEXT))


def repaired_record(raw: DataFrame, names: SystemNames) -> Column:
    """The raw row's record was repaired before it was typed: its line's bytes were not UTF-8, or it holds a lone
    surrogate escape (`text_repair`). A raw table written before `data_bytes` existed has no such lines."""
    not_utf8 = F.col(names.data_bytes).isNotNull() if names.data_bytes in raw.columns else F.lit(False)
    return not_utf8 | holds_lone_surrogate(F.col(names.data))
