"""The least plain Spark can do to produce the tables lakenorm writes for the sample `orders` stream.

A lower bound for `bench_normalize.py`, not a product path: one read of the lines, a raw table (text,
128-bit raw id, load ID, file, position), one `from_json` parse cached with them, and the typed root and
three child tables with 128-bit row, parent and root keys, each appended to Delta. It leaves out all that
the contract adds on top: no duplicate-key or bad-line classification beyond "the reader got no object", no
per-value NULLED tracking (`_norm_meta` is always empty), no replacement of a load's earlier rows, no
counters, no registry, schema versions or union types. Values are typed by Spark's reader itself (the bare
copy's schema), and `attributes` keeps the reader's own JSON text.
"""
from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from normalization_core.transform.changes import meta_column
from normalization_core.transform.keys import key128

# Named as lakenorm names them, so that the two warehouses compare table by table.
FLOOR_TABLES = ("_norm_raw_orders", "orders", "orders__line_items", "orders__line_items__discounts", "orders__tags")


def _flat(value: Column, data_type: T.StructType, prefix: str = "") -> Iterator[Column]:
    """Non-array fields of a struct as `parent__child` columns (arrays become child tables)."""
    for f in data_type.fields:
        if isinstance(f.dataType, T.StructType):
            yield from _flat(value[f.name], f.dataType, f"{prefix}{f.name}__")
        elif not isinstance(f.dataType, T.ArrayType):
            yield value[f.name].alias(prefix + f.name)


def _child_keys(*names: str) -> list[Column]:
    return [*[F.col(n) for n in names], F.col("list_idx").cast("long"), F.col("root_id"), meta_column([]).alias("meta")]


def _children(rows: DataFrame, array: Column, name: str) -> DataFrame:
    exploded = rows.select("load_id", "root_id", F.col("row_id").alias("parent_id"),
                           F.posexplode(array).alias("list_idx", "element"))
    return exploded.withColumn("row_id", key128(F.col("parent_id"), F.lit(name), F.col("list_idx")))


def floor_run(spark: SparkSession, files: list[str], schema: T.StructType, out: Path) -> float:
    """Seconds to write the raw table and the four typed tables of `files` (sample orders, read with `schema`)
    to Delta under `out`."""
    started = time.monotonic()
    lines = spark.read.text(files).select(F.col("_metadata.file_path").alias("file"), F.col("value").alias("text"),
                                          F.monotonically_increasing_id().alias("line"))
    load_id = F.regexp_extract(F.col("file"), r"/([^/]+)/[^/]+$", 1)
    cached = lines.select(key128(load_id, F.col("file"), F.col("line")).alias("raw_id"), load_id.alias("load_id"),
                          "file", "line", "text", F.from_json(F.col("text"), schema).alias("tree"))
    cached = cached.persist(StorageLevel.MEMORY_AND_DISK)
    cached.count()
    roots = cached.where(F.col("tree").isNotNull()).select(
        "raw_id", "load_id", "tree", key128(F.col("raw_id")).alias("root_id")).withColumn("row_id", F.col("root_id"))
    item_type = schema["line_items"].dataType.elementType
    items = _children(roots, F.col("tree.line_items"), "orders__line_items")
    discounts = _children(items.select("load_id", "root_id", "row_id", F.col("element.discounts").alias("d")),
                          F.col("d"), "orders__line_items__discounts")
    tables = {
        "_norm_raw_orders": cached.select(
            "raw_id", "load_id", F.current_timestamp().alias("extracted_at"), "text", "file", "line",
            F.when(F.col("tree").isNull(), F.lit("not a JSON object")).alias("error"),
            F.lit(None).cast("binary").alias("data_bytes")),  # the raw table's columns (no UTF-8 check: a floor)
        "orders": roots.select(*_flat(F.col("tree"), schema), "raw_id", F.current_timestamp().alias("extracted_at"),
                               "load_id", "row_id", meta_column([]).alias("meta"),
                               F.current_timestamp().alias("normalized_at")),
        "orders__line_items": items.select(*_flat(F.col("element"), item_type),
                                           *_child_keys("load_id", "row_id", "parent_id")),
        "orders__line_items__discounts": discounts.select(
            *_flat(F.col("element"), item_type["discounts"].dataType.elementType),
            *_child_keys("load_id", "row_id", "parent_id")),
        "orders__tags": _children(roots, F.col("tree.tags"), "orders__tags").select(
            F.col("element").alias("value"), *_child_keys("load_id", "row_id", "parent_id")),
    }
    for name, df in tables.items():
        df.write.format("delta").mode("append").save(str(out / name))
    cached.unpersist()
    return time.monotonic() - started
