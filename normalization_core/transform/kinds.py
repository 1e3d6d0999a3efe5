"""The kind of a JSON value as a Column, read from its VARIANT: JSON Schema's kinds (`json_kind`, which
union options a value fits) and dlt's data types (`value_kind`, SPEC §5.2, for inference and variant columns)."""
from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column
from pyspark.sql import functions as F

from normalization_core.transform.json_text import STRING
from normalization_core.transform.sql_text import column_name, string_literal, text_map

ISO_DATE = r"^\s*[+-]?\d{4,6}-\d{1,2}-\d{1,2}"
"""Timestamps and dates must start with a date: Spark would read `10:00:00` as today at 10:00."""
DATE_ONLY = ISO_DATE + r"\s*$"
_ISO_DATE_TIME = ISO_DATE + r"[T ]\d{1,2}:\d{2}"
"""dlt's iso_timestamp: a date and a time of day (a bare date is not a timestamp)."""
_TOKENS = STRING + r'|[^"]++'
"""A JSON text as strings (escapes included) and the runs between them."""
_NUMBER_START, _NUMBER_END = r"(?<![\w.+-])", r"(?![\w.])"
_BIG_INTEGER = _NUMBER_START + r"(-?\d{39,})" + _NUMBER_END
"""An integer of more than 38 digits: Spark would parse it as a lossy DOUBLE."""
_ZERO_FRACTION = _NUMBER_START + r"(-?\d{1,15}\.0+)" + _NUMBER_END
"""A number written with a fraction of zeros (`3170.00`, `1.0`): a VARIANT keeps it as an integral DECIMAL."""
_PAST_DOUBLE_EXPONENT = r"[eE](?:\+?(?:30[89]|3[1-9]\d|[4-9]\d\d|\d{4,})|-(?:32[4-9]|3[3-9]\d|[4-9]\d\d|\d{4,}))"
"""An exponent past a double's range: `1e309` reads as Infinity, `1e-324` as 0.0 (`1e308` and `1e-323` fit, but
`2e308` does not: from 308 on, as written, a number is kept as text)."""
_PAST_DOUBLE = _NUMBER_START + r"(-?\d[\d.]*" + _PAST_DOUBLE_EXPONENT + ")" + _NUMBER_END
_REWRITTEN = r"\d{39}|\d\.0|" + _PAST_DOUBLE_EXPONENT
_INEXACT_NUMBER = _NUMBER_START + (
    r"(-?(?:(?=(?:\.?\d){39})\d[\d.]*(?:[eE][+-]?\d+)?"  # more than 38 digits
    r"|\d[\d.]{15,}[eE][+-]?\d+"  # 16 or more digits and an exponent
    r"|\d[\d.]*[eE][+-]?(?:30[89]|3[1-9]\d|[4-9]\d\d|\d{4,})))"  # at or beyond a double's range
) + _NUMBER_END
"""A number a VARIANT may hold only as a double that lost some of it (a DECIMAL holds 38 digits, no exponent)."""


def inference_text(json_text: Column) -> Column:
    """JSON text whose VARIANT has the kinds dlt infers (SPEC §5.2): integers wider than decimal(38,0) and numbers
    past a double's range quoted, so that they stay exact (as text), and numbers written with a zero fraction
    given an exponent, so that they are doubles as for dlt's JSON parser, not integers. Strings are left as they
    are."""
    def rewritten(run: Column) -> Column:
        exact = F.regexp_replace(F.regexp_replace(run, _BIG_INTEGER, '"$1"'), _PAST_DOUBLE, '"$1"')
        return F.regexp_replace(exact, _ZERO_FRACTION, "$1e0")
    return _outside_strings(json_text, _REWRITTEN, rewritten)


def exact_number_text(json_text: Column) -> Column:
    """JSON text whose VARIANT holds every number as written: a number it would read through a double with
    digits lost (`_INEXACT_NUMBER`) is quoted, so that typing reads the digits themselves (a `number`
    column then records what its double loses, SPEC §5.1; a string column keeps them)."""
    return _outside_strings(json_text, _INEXACT_NUMBER, lambda run: F.regexp_replace(run, _INEXACT_NUMBER, '"$1"'))


def _outside_strings(json_text: Column, candidates: str, rewrite: Callable[[Column], Column]) -> Column:
    """`rewrite` applied to the runs of the text between its strings, for texts where `candidates` matches."""
    tokens = F.regexp_extract_all(json_text, F.lit(_TOKENS), 0)
    rewritten = F.transform(tokens, lambda token: F.when(token.startswith('"'), token).otherwise(rewrite(token)))
    return F.when(json_text.rlike(candidates), F.array_join(rewritten, "")).otherwise(json_text)


def is_present(variant: Column) -> Column:
    """The VARIANT holds a value other than JSON null."""
    return variant.isNotNull() & ~F.is_variant_null(variant)


def json_kind(variant: Column) -> Column:
    """`integer`, `number`, `string`, `boolean`, `object`, `array`, or NULL for a missing value or JSON null."""
    return F.when(is_present(variant), F.coalesce(_kind_of_type(variant), F.lit("number")))


def value_kind(name: str) -> Column:
    """`text`, `bigint`, `decimal`, `double`, `bool`, `timestamp`, `date`, `object`, `array`; NULL for null: the
    JSON kind of the VARIANT column `name`, with strings told apart by their text and integers by whether a
    BIGINT holds them. SQL text (`sql_text`): a wide stream projects one per inferred path."""
    v = column_name(name)
    shape = f"regexp_replace(schema_of_variant({v}), {string_literal(_SHAPE)}, '')"
    kind = f"try_element_at({text_map(_JSON_KINDS)}, {shape})"
    return F.expr(f"CASE WHEN {v} IS NULL OR is_variant_null({v}) THEN NULL"
                  f" WHEN {kind} = 'string' THEN {_string_kind(f'try_cast({v} AS STRING)')}"
                  f" WHEN {kind} = 'integer' THEN IF(try_cast({v} AS BIGINT) IS NULL, 'decimal', 'bigint')"
                  f" ELSE coalesce(try_element_at({text_map(_VALUE_KINDS)}, {kind}), 'double') END")


def _string_kind(text: str) -> str:
    """`timestamp` for an ISO date and time that parses, `date` for a bare ISO date, else `text` (as is a date
    or time outside the years 0001 to 9999, which typing could not keep: `casts.in_readable_years`)."""
    return (f"CASE WHEN {text} RLIKE {string_literal(_ISO_DATE_TIME)}"
            f" AND year(try_cast({text} AS TIMESTAMP)) BETWEEN 1 AND 9999"
            f" THEN 'timestamp' WHEN {text} RLIKE {string_literal(DATE_ONLY)}"
            f" AND year(try_cast({text} AS DATE)) BETWEEN 1 AND 9999 THEN 'date' ELSE 'text' END")


def _kind_of_type(variant: Column) -> Column:
    """The JSON kind of a present value from its variant type, NULL for a fractional number. One
    `schema_of_variant` per use: a wide stream types hundreds of columns by kind in one projection."""
    shape = F.regexp_replace(F.schema_of_variant(variant), _SHAPE, "")
    return F.try_element_at(F.expr(text_map(_JSON_KINDS)), shape)


_SHAPE = r"<.*$|\(\d+,0\)$"
"""What `schema_of_variant` says beyond the shape: an object's or array's members, an integral decimal's size."""
_JSON_KINDS = {"OBJECT": "object", "ARRAY": "array", "STRING": "string", "BOOLEAN": "boolean",
               **{integral: "integer" for integral in ("BIGINT", "INT", "SMALLINT", "TINYINT", "DECIMAL")}}
_VALUE_KINDS = {"boolean": "bool", "object": "object", "array": "array"}


