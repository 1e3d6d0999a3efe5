"""Typing leaf values on the executors (SPEC §5.1): `Column -> Column` casts that never fail.

A value that cannot be cast becomes NULL and yields a change `{field, NULLED, DESTINATION_TYPECAST_ERROR}`
(`changes`). Sources are the JSON text of a scalar (StringType) or, for JSON text, unions and union objects,
a VARIANT.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from normalization_core.schema.model import DATE_TIME_TYPES, FieldSchema, UnionVariant
from normalization_core.transform.changes import nulled, truncated
from normalization_core.transform.kinds import DATE_ONLY, ISO_DATE, is_present, json_kind

SCALAR_LOGICAL_TYPES = frozenset({"bigint", "decimal", "double", "boolean", "string", "date", "timestamp",
                                  "timestamp_ntz", "time"})
"""Logical types read from the JSON text of the value; the others are read from a VARIANT."""
MICROS_PER_DAY = 86_400_000_000
_HAS_ZONE = r"(?i)\d:\d{2}(:\d{2}([.,]\d*)?)?\s*(z|[+-]\d{1,2}(:?\d{2}){0,2}|[a-z][a-z0-9/_+:.-]*)\s*$"
"""A time of day followed by `Z`, an offset or a zone name."""
_TIME_START = r"^\s*\d{1,2}:\d{2}"
_NUMBER = r"^\s*[+-]?(\d+)(?:\.(\d*))?(?:[eE]([+-]?\d+))?\s*$"
_MANTISSA = r"^\s*[+-]?([\d.]*)"
_FIRST_MICROS, _END_MICROS = -62_135_596_800_000_000, 253_402_300_800_000_000
"""0001-01-01T00:00:00Z and 10000-01-01T00:00:00Z in microseconds since the epoch."""


@dataclass(frozen=True)
class Typed:
    """A typed value and the changes typing it may record (each a change struct or NULL)."""

    value: Column
    changes: tuple[Column, ...] = ()


def is_integral_number(text: Column) -> Column:
    """Number text whose value has no fraction: `12`, `12.0`, `1e3`, `1.5E3` (JSON Schema's integer is any
    number with a zero fraction; a double such as 1e18 reaches us as `1.0E18`)."""
    fraction = F.regexp_replace(F.regexp_extract(text, _NUMBER, 2), "0+$", "")
    exponent = F.coalesce(F.regexp_extract(text, _NUMBER, 3).try_cast("int"), F.lit(0))
    return text.rlike(_NUMBER) & (F.length(fraction) <= exponent)


def to_bigint(text: Column) -> Column:
    exact = F.when(is_integral_number(text), F.trim(text).try_cast("decimal(38,0)"))
    return F.coalesce(text.try_cast("bigint"), exact.try_cast("bigint"))


def to_big_integer(text: Column) -> Column:
    """`decimal(38,0)` from integer text only (a cast would round `1.5` silently)."""
    return F.when(is_integral_number(text), F.trim(text).try_cast("decimal(38,0)"))


def to_double(text: Column) -> Column:
    """NaN and (-)Infinity are kept; a number beyond a double's range (`1e400`) is NULL: no double holds it."""
    double = text.try_cast("double")
    return F.when((F.abs(double) != F.lit("Infinity").cast("double")) | ~text.rlike(_NUMBER), double)


def to_boolean(text: Column) -> Column:
    return text.try_cast("boolean")


def in_readable_years(value: Column, instant: bool = False) -> Column:
    """A date or timestamp (`instant`: in UTC) of the years 0001 to 9999, else NULL. Spark writes any year, but
    delta-rs reads a file's statistics with Python's dates, which end there, and refuses the table (BigQuery's
    range is the same)."""
    if instant:
        micros = F.unix_micros(value)
        return F.when((micros >= F.lit(_FIRST_MICROS)) & (micros < F.lit(_END_MICROS)), value)
    return F.when(F.year(value).between(1, 9999), value)


def to_date(text: Column) -> Column:
    return in_readable_years(F.when(text.rlike(ISO_DATE), text.try_cast("date")))


def to_timestamp_ntz(text: Column) -> Column:
    """Wall-clock time; an offset in the text is ignored."""
    return in_readable_years(F.when(text.rlike(ISO_DATE), text.try_cast("timestamp_ntz")))


def to_timestamp_utc(text: Column) -> Column:
    """An instant: any offset or zone is applied; text without one is UTC, whatever the session zone.

    In a UTC session (lakenorm's own) Spark's cast reads both kinds of text as that; the zone check serves
    other sessions only. The zone is the one the cast itself was resolved with, a constant by the time the
    query is planned, so the branch not taken is dropped from the plan.
    """
    zoned = F.when(text.rlike(ISO_DATE), text.try_cast("timestamp"))
    wall = to_timestamp_ntz(text)
    naive_as_utc = F.make_timestamp(F.year(wall), F.month(wall), F.dayofmonth(wall), F.hour(wall),
                                    F.minute(wall), F.date_part(F.lit("SECOND"), wall), F.lit("UTC"))
    in_any_zone = F.when(text.rlike(_HAS_ZONE), zoned).otherwise(naive_as_utc)
    return in_readable_years(F.when(_resolved_zone_name() == F.lit("UTC"), zoned).otherwise(in_any_zone), True)


def _resolved_zone_name() -> Column:
    """The short name of the session zone as of when the expression is resolved (as casts take it): `UTC`
    only for zones always at offset 0. (`z`, unlike the zone ID pattern, also formats under the LEGACY
    time parser policy.)"""
    return F.date_format(F.lit(0).cast("timestamp"), "z")


def to_time_micros(text: Column) -> Column:
    """`HH:MM[:SS[.ffffff]][Z|±HH[:MM]]` -> microseconds since midnight, converted to UTC when zoned."""
    stamp = F.concat(F.lit("1970-01-01T"), F.trim(text))
    zoned = F.pmod(F.unix_micros(stamp.try_cast("timestamp")), F.lit(MICROS_PER_DAY))
    wall = stamp.try_cast("timestamp_ntz")
    seconds = F.date_part(F.lit("SECOND"), wall) * 1_000_000
    minutes = F.hour(wall).cast("bigint") * 60 + F.minute(wall)
    naive = minutes * 60_000_000 + seconds.cast("bigint")
    return F.when(text.rlike(_TIME_START), F.when(text.rlike(_HAS_ZONE), zoned).otherwise(naive))


SCALAR_CASTS: dict[str, Callable[[Column], Column]] = {
    "bigint": to_bigint, "decimal": to_big_integer, "double": to_double, "boolean": to_boolean,
    "date": to_date, "timestamp": to_timestamp_utc, "timestamp_ntz": to_timestamp_ntz, "time": to_time_micros,
}


def cast_scalar(text: Column, logical_type: str) -> Column:
    """JSON text -> the logical type's Spark type; NULL where it cannot be cast."""
    return text if logical_type == "string" else SCALAR_CASTS[logical_type](text)


def cast_failed(text: Column, typed: Column, logical_type: str) -> Column | None:
    """A non-null text whose cast is NULL (an empty date/time text is not a failure); None: cannot fail."""
    if logical_type == "string":
        return None
    failed = text.isNotNull() & typed.isNull()
    return failed & (F.trim(text) != "") if logical_type in DATE_TIME_TYPES else failed


def cast_changes(text: Column, typed: Column, logical_type: str, field: str) -> list[Column]:
    """The changes typing `text` as `typed` may record: NULLED where the cast failed, TRUNCATED where a double
    keeps fewer significant digits than the text has (`12345678901234567891.1234567891` as
    `1.2345678901234567E19`)."""
    failed = cast_failed(text, typed, logical_type)
    changes = [] if failed is None else [nulled(field, failed)]
    if logical_type == "double":
        changes.append(truncated(field, lost_digits(text, typed)))
    return changes


def lost_digits(text: Column, double: Column) -> Column:
    """The number text has significant digits the double does not keep. Text of 15 characters or fewer without
    an exponent has at most 15 digits, which every double keeps; only longer text, or text with an exponent
    (`1e-400` reads as 0.0), is compared. Java 17 prints some doubles with a digit more than the shortest text
    that reads back as them (`5.413894470229614e+16` prints as `5.4138944702296144E16`): the printed digits are
    compared rounded to as many as the text has."""
    def digits(number: Column) -> Column:
        return F.regexp_replace(F.regexp_replace(F.regexp_extract(number, _MANTISSA, 1), r"\.", ""), "^0+|0+$", "")
    long_number = ((F.length(text) > 15) | text.rlike("[eE]")) & text.rlike(_NUMBER) & double.isNotNull()
    written, kept = digits(text), digits(double.cast("string"))
    printed_longer = F.coalesce(written == _rounded_digits(kept, F.length(written)), F.lit(False))
    return long_number & (written != kept) & ~printed_longer


def _rounded_digits(digits: Column, count: Column) -> Column:
    """A digit string rounded half up to `count` digits, trailing zeros dropped (NULL where it has no more)."""
    head = F.substring(digits, F.lit(1), count).try_cast("decimal(38,0)")
    up = F.when(F.substring(digits, count + 1, F.lit(1)) >= F.lit("5"), F.lit(1)).otherwise(F.lit(0))
    rounded = (head + up).cast("decimal(38,0)").cast("string")
    return F.when(F.length(digits) > count, F.regexp_replace(rounded, "0+$", ""))


def type_scalar(text: Column, logical_type: str, field: str) -> Typed:
    typed = cast_scalar(text, logical_type)
    return Typed(typed, tuple(cast_changes(text, typed, logical_type, field)))


def json_text(variant: Column) -> Column:
    """The value as JSON text; NULL for a missing value or JSON null."""
    return F.when(is_present(variant), F.to_json(variant))


def type_value(source: Column, logical_type: str, field: str, variants: list[UnionVariant] | None = None,
               fields: list[FieldSchema] | None = None) -> Typed:
    """Type any value: `source` is text for scalar logical types, else a VARIANT."""
    if logical_type in SCALAR_LOGICAL_TYPES:
        return type_scalar(source, logical_type, field)
    if logical_type == "union":
        return type_union(source, variants or [], field)
    if logical_type == "object":
        return type_object(source, fields or [], field)
    return Typed(json_text(source))


def variant_struct(fields: Iterable[tuple[str, str]]) -> tuple[T.StructType, T.StructType]:
    """(by-key type, positional type) of an object whose (key, logical type) pairs are given.

    A VARIANT casts to the by-key struct; the positional copy (`_0`, `_1`, ...) lets fields be read
    when two keys differ only in case, which a case-insensitive session cannot resolve by name.
    """
    types = [(key, T.StringType() if logical in SCALAR_LOGICAL_TYPES else T.VariantType())
             for key, logical in fields]
    by_key = T.StructType([T.StructField(key, data_type) for key, data_type in types])
    positional = T.StructType([T.StructField(f"_{i}", data_type) for i, (_, data_type) in enumerate(types)])
    return by_key, positional


def cast_object(variant: Column, fields: Iterable[tuple[str, str]]) -> Column:
    """A positional struct of the object's fields; NULL when the value is not an object."""
    by_key, positional = variant_struct(fields)
    return variant.try_cast(by_key).cast(positional)


def type_object(variant: Column, fields: list[FieldSchema], field: str) -> Typed:
    """An object variant of a union -> `struct<field: type, ...>` with each field typed."""
    obj = cast_object(variant, [(f["key"], f["logical_type"]) for f in fields])
    typed_fields = [type_value(obj.getField(f"_{i}"), f["logical_type"], f"{field}.{f['key']}",
                               f.get("variants"), f.get("fields")) for i, f in enumerate(fields)]
    value = F.when(obj.isNotNull(), F.struct(*[t.value.alias(f["name"]) for t, f in zip(typed_fields, fields)]))
    return Typed(value, tuple(change for t in typed_fields for change in t.changes))


_UNION_PRECEDENCE: list[tuple[str, tuple[str, ...]]] = [
    ("integer", ("integer", "number")), ("number", ("integer", "number")), ("date", ("string",)),
    ("time_without_timezone", ("string",)), ("time_with_timezone", ("string",)),
    ("timestamp_with_timezone", ("string",)), ("timestamp_without_timezone", ("string",)),
    ("string", ("string",)), ("boolean", ("boolean",)), ("object", ("object",)), ("array", ("array",)),
]
"""Which option a value takes, first match wins: (option, JSON kinds it accepts). A string is a date only
when it is a bare date, a time or timestamp only when it parses, else it is a plain string."""


def type_union(variant: Column, variants: list[UnionVariant], field: str) -> Typed:
    """A typed disjoint record `struct<type: string, <option>: ...>` with exactly one option set."""
    kind, text = json_kind(variant), variant.try_cast("string")
    typed = {v["name"]: type_value(text if v["logical_type"] in SCALAR_LOGICAL_TYPES else variant,
                                   v["logical_type"], field, fields=v.get("fields")) for v in variants}
    chosen = F.lit(None).cast("string")
    for name, kinds in reversed(_UNION_PRECEDENCE):
        if name in typed:
            fits = kind.isin(*kinds) & typed[name].value.isNotNull()
            if name == "date":
                fits = fits & text.rlike(DATE_ONLY)
            chosen = F.when(fits, F.lit(name)).otherwise(chosen)
    members = [F.when(chosen == v["name"], typed[v["name"]].value).alias(v["name"]) for v in variants]
    value = F.when(chosen.isNotNull(), F.struct(chosen.alias("type"), *members))
    nested = [F.when(chosen == "object", change) for change in typed["object"].changes] if "object" in typed else []
    return Typed(value, (nulled(field, is_present(variant) & chosen.isNull()), *nested))
