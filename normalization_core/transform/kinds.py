"""The kind of a JSON value as a Column, read from its VARIANT: JSON Schema's kinds (`json_kind`, which
union options a value fits) and dlt's data types (`value_kind`, SPEC §5.2, for inference and variant columns)."""
from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

ISO_DATE = r"^\s*[+-]?\d{4,6}-\d{1,2}-\d{1,2}"
"""Timestamps and dates must start with a date: Spark would read `10:00:00` as today at 10:00."""
DATE_ONLY = ISO_DATE + r"\s*$"
_ISO_DATE_TIME = ISO_DATE + r"[T ]\d{1,2}:\d{2}"
"""dlt's iso_timestamp: a date and a time of day (a bare date is not a timestamp)."""
_INTEGRAL = ("BIGINT", "INT", "SMALLINT", "TINYINT")
_BIG_INTEGER = r"(?<=[:\[,])(\s*)(-?\d{39,})(?=\s*[,\]}])"
"""An integer of more than 38 digits in value position: Spark would parse it as a lossy DOUBLE."""


def keep_big_integers(json_text: Column) -> Column:
    """JSON text with integers wider than decimal(38,0) quoted, so that they stay exact (as text)."""
    return F.regexp_replace(json_text, _BIG_INTEGER, '$1"$2"')


def is_present(variant: Column) -> Column:
    """The VARIANT holds a value other than JSON null."""
    return variant.isNotNull() & ~F.is_variant_null(variant)


def json_kind(variant: Column) -> Column:
    """`integer`, `number`, `string`, `boolean`, `object`, `array`, or NULL for a missing value or JSON null."""
    schema = F.schema_of_variant(variant)
    integral = schema.isin(*_INTEGRAL) | schema.rlike(r"^DECIMAL\(\d+,0\)$")
    return (F.when(~is_present(variant), F.lit(None).cast("string"))
            .when(schema.startswith("OBJECT"), "object").when(schema.startswith("ARRAY"), "array")
            .when(schema == "STRING", "string").when(schema == "BOOLEAN", "boolean")
            .when(integral, "integer").otherwise("number"))


def value_kind(variant: Column) -> Column:
    """`text`, `bigint`, `decimal`, `double`, `bool`, `timestamp`, `date`, `object`, `array`; NULL for null:
    the JSON kind, with strings told apart by their text and integers by whether a BIGINT holds them."""
    kind = json_kind(variant)
    bigint = F.when(variant.try_cast(T.LongType()).isNotNull(), F.lit("bigint")).otherwise(F.lit("decimal"))
    return (F.when(kind == "string", string_kind(variant.try_cast(T.StringType())))
            .when(kind == "integer", bigint)
            .when(kind == "number", "double")
            .when(kind == "boolean", "bool")
            .otherwise(kind))


def string_kind(text: Column) -> Column:
    """`timestamp` for an ISO date and time that parses, `date` for a bare ISO date, else `text`."""
    return (F.when(text.rlike(_ISO_DATE_TIME) & text.try_cast(T.TimestampType()).isNotNull(), "timestamp")
            .when(text.rlike(DATE_ONLY) & text.try_cast(T.DateType()).isNotNull(), "date")
            .otherwise("text"))
