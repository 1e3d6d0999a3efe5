"""A session's settings: set for a block, and Spark's byte sizes read."""
from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from pyspark.sql import SparkSession

_BYTE_UNITS = {"b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "g": 1 << 30, "gb": 1 << 30,
               "t": 1 << 40, "tb": 1 << 40, "p": 1 << 50, "pb": 1 << 50}


def byte_size(setting: str | None) -> int:
    """A Spark byte-size setting (`134217728`, `128MB`, `4m`) in bytes."""
    found = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", setting or "")
    if found is None or found.group(2).lower() not in {"", *_BYTE_UNITS}:
        raise ValueError(f"not a byte size: {setting!r}")
    return int(found.group(1)) * _BYTE_UNITS.get(found.group(2).lower(), 1)


@contextmanager
def session_settings(spark: SparkSession, settings: Mapping[str, str]) -> Iterator[None]:
    """The session's `settings` in the block, and what it had before afterwards."""
    previous = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in previous.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
