"""The 128-bit keys tables already hold: raw ids, row keys and SCD keys keep their encodings."""
from __future__ import annotations

import hashlib
import json

from pyspark.sql import functions as F

from normalization_core.transform.keys import KeyEncoding, key128
from normalization_core.transform.raw import raw_id


def sha128(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def test_keys_hash_their_parts_as_tables_written_before_hold_them(spark) -> None:
    rows = spark.createDataFrame([("L1", "part é.jsonl", 7, None)], "load string, file string, line long, none string")
    load, file, line, none = F.col("load"), F.col("file"), F.col("line"), F.col("none")
    got = rows.select(
        raw_id(load, file, line).alias("raw_id"),
        key128(load, none, line).alias("separated"),
        key128(load, none, line, encoding=KeyEncoding.JSON_ARRAY).alias("json_array"),
    ).first()
    assert got["raw_id"] == sha128("L1\x1fpart é.jsonl\x1f7")
    assert got["separated"] == sha128("L1\x1f7")  # a NULL part is left out
    assert got["json_array"] == sha128(json.dumps(["L1", None, "7"], separators=(",", ":"), ensure_ascii=False))
