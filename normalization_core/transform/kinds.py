"""The kind of a JSON value (dlt's data types, SPEC §5.2) as a Column, for inference and variant columns."""
from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from normalization_core.transform.typing import _DATE_ONLY, _ISO_DATE, is_present

_ISO_DATE_TIME = _ISO_DATE + r"[T ]\d{1,2}:\d{2}"
"""dlt's iso_timestamp: a date and a time of day (a bare date is not a timestamp)."""
_INTEGRAL = ("BIGINT", "INT", "SMALLINT", "TINYINT")
_BIG_INTEGER = r"(?<=[:\[,])(\s*)(-?\d{39,})(?=\s*[,\]}])"
"""An integer of more than 38 digits in value position: Spark would parse it as a lossy DOUBLE."""


def keep_big_integers(json_text: Column) -> Column:
    """JSON text with integers wider than decimal(38,0) quoted, so that they stay exact (as text)."""
    return F.regexp_replace(json_text, _BIG_INTEGER, '$1"$2"')


def value_kind(variant: Column) -> Column:
    """`text`, `bigint`, `decimal`, `double`, `bool`, `timestamp`, `date`, `object`, `array`; NULL for null."""
    schema = F.schema_of_variant(variant)
    text = variant.try_cast(T.StringType())
    integral = schema.isin(*_INTEGRAL) | schema.rlike(r"^DECIMAL\(\d+,0\)$")
    return (F.when(~is_present(variant), F.lit(None).cast("string"))
            .when(schema.startswith("OBJECT"), "object").when(schema.startswith("ARRAY"), "array")
            .when(schema == "BOOLEAN", "bool")
            .when(schema == "STRING", string_kind(text))
            .when(integral & variant.try_cast(T.LongType()).isNotNull(), "bigint")
            .when(integral, "decimal")
            .otherwise("double"))


def string_kind(text: Column) -> Column:
    """`timestamp` for an ISO date and time that parses, `date` for a bare ISO date, else `text`."""
    return (F.when(text.rlike(_ISO_DATE_TIME) & text.try_cast(T.TimestampType()).isNotNull(), "timestamp")
            .when(text.rlike(_DATE_ONLY) & text.try_cast(T.DateType()).isNotNull(), "date")
            .otherwise("text"))
