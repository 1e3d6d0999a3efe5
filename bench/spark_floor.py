"""The least plain Spark can do to produce the tables lakenorm writes for the sample `orders` stream.

A lower bound for `bench_normalize.py`, not a product path: one read of the lines, a raw table (text,
128-bit raw id, load ID, file, position), one `from_json` parse cached with them, and the typed root and
three child tables with 128-bit row, parent and root keys, each appended to Delta. It leaves out all that
the contract adds on top: no duplicate-key or bad-line classification beyond "the reader got no object", no
per-value NULLED tracking (`_norm_meta` is always empty), no replacement of a load's earlier rows, no
counters, no registry, schema versions or union types, and `attributes` keeps the reader's own JSON text.
"""
from __future__ import annotations

import time
from pathlib import Path

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

FLOOR_TABLES = ("_raw_orders", "orders", "orders__line_items", "orders__line_items__discounts", "orders__tags")
_CHANGES_TYPE = "array<struct<field:string,change:string,reason:string>>"
_ORDER_SCALARS = {"id": "bigint", "created_at": "timestamp", "updated_at": "timestamp", "shipped_at": "timestamp",
                  "status": "string", "total": "double", "currency": "string", "notes": "string",
                  "attributes": "string"}
_CUSTOMER = {"id": "bigint", "email": "string", "name": "string", "vip": "boolean"}
_ADDRESS = ("city", "zip", "country")


def _meta() -> Column:
    """`_norm_meta` with no changes, as lakenorm writes it for a row typed without a failure."""
    return F.struct(F.array().cast(_CHANGES_TYPE).alias("changes")).alias("meta")


def _key(*parts: Column) -> Column:
    return F.substring(F.sha2(F.concat_ws("\u001f", *[p.cast("string") for p in parts]), 256), 1, 32)


def _tree_schema() -> T.StructType:
    discount = T.StructType([T.StructField("code", T.StringType()), T.StructField("amount", T.DoubleType())])
    item = T.StructType([T.StructField("sku", T.StringType()), T.StructField("qty", T.LongType()),
                         T.StructField("price", T.DoubleType()),
                         T.StructField("discounts", T.ArrayType(discount))])
    address = T.StructType([T.StructField(k, T.StringType()) for k in _ADDRESS])
    customer = T.StructType([T.StructField("id", T.LongType()), T.StructField("email", T.StringType()),
                             T.StructField("name", T.StringType()), T.StructField("vip", T.BooleanType()),
                             T.StructField("address", address)])
    scalars = {"bigint": T.LongType(), "double": T.DoubleType()}
    fields = [T.StructField(k, scalars.get(v, T.StringType())) for k, v in _ORDER_SCALARS.items()]
    return T.StructType([*fields, T.StructField("customer", customer), T.StructField("line_items", T.ArrayType(item)),
                         T.StructField("tags", T.ArrayType(T.StringType()))])


def _lines(spark: SparkSession, files: list[str]) -> DataFrame:
    lines = spark.read.text(files).select(F.col("_metadata.file_path").alias("file"), F.col("value").alias("text"),
                                          F.monotonically_increasing_id().alias("line"))
    load_id = F.regexp_extract(F.col("file"), r"/([^/]+)/[^/]+$", 1)
    tree = F.from_json(F.col("text"), _tree_schema())
    return lines.select(_key(load_id, F.col("file"), F.col("line")).alias("raw_id"), load_id.alias("load_id"),
                        "file", "line", "text", tree.alias("tree"))


def _orders(cached: DataFrame) -> DataFrame:
    tree = F.col("tree")
    values = [tree[k].cast(t).alias(k) for k, t in _ORDER_SCALARS.items()]
    values += [tree["customer"][k].alias(f"customer__{k}") for k in _CUSTOMER]
    values += [tree["customer"]["address"][k].alias(f"customer__address__{k}") for k in _ADDRESS]
    return cached.where(tree.isNotNull()).select(
        *values, "raw_id", F.current_timestamp().alias("extracted_at"), "load_id",
        _key(F.col("raw_id")).alias("row_id"), _meta(), F.current_timestamp().alias("normalized_at"))


def _children(rows: DataFrame, array: Column, name: str) -> DataFrame:
    exploded = rows.select("load_id", "root_id", F.col("row_id").alias("parent_id"),
                           F.posexplode(array).alias("list_idx", "element"))
    return exploded.withColumn("row_id", _key(F.col("parent_id"), F.lit(name), F.col("list_idx")))


def floor_run(spark: SparkSession, files: list[str], out: Path) -> float:
    """Seconds to write the raw table and the four typed tables of `files` (sample orders) to Delta under `out`."""
    started = time.monotonic()
    cached = _lines(spark, files).persist(StorageLevel.MEMORY_AND_DISK)
    cached.count()
    raw = cached.select("raw_id", "load_id", F.current_timestamp().alias("extracted_at"), "text", "file", "line",
                        F.when(F.col("tree").isNull(), F.lit("not a JSON object")).alias("error"))
    roots = cached.where(F.col("tree").isNotNull()).select(
        "load_id", "tree", _key(F.col("raw_id")).alias("root_id")).withColumn("row_id", F.col("root_id"))
    items = _children(roots, F.col("tree.line_items"), "orders__line_items")
    discounts = _children(items.select("load_id", "root_id", "row_id", F.col("element.discounts").alias("d")),
                          F.col("d"), "orders__line_items__discounts")
    tables = {
        "_raw_orders": raw,
        "orders": _orders(cached),
        "orders__line_items": items.select("element.sku", "element.qty", "element.price", "load_id", "row_id",
                                           "parent_id", F.col("list_idx").cast("long"), "root_id", _meta()),
        "orders__line_items__discounts": discounts.select("element.code", "element.amount", "load_id", "row_id",
                                                          "parent_id", F.col("list_idx").cast("long"), "root_id",
                                                          _meta()),
        "orders__tags": _children(roots, F.col("tree.tags"), "orders__tags").select(
            F.col("element").alias("value"), "load_id", "row_id", "parent_id", F.col("list_idx").cast("long"),
            "root_id", _meta()),
    }
    for name, df in tables.items():
        df.write.format("delta").mode("append").save(str(out / name))
    cached.unpersist()
    return time.monotonic() - started
