"""Reading a load package's files into Spark, one row per line, without a driver-side pass."""
from __future__ import annotations

import re
from functools import reduce
from urllib.parse import unquote

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from normalization_core.errors import PackageError
from normalization_core.io.packages import LoadPackage
from normalization_core.transform.raw import CONTENT, FILE, LINE, STREAM, TEXT, split_lines, trim_terminators

_FAILED_FILE = re.compile(r"error while reading file (\S+?)\.?\s")
_GLOB_CHARS = re.compile(r"[*?\[\]{}]")


def read_package_lines(spark: SparkSession, package: LoadPackage) -> DataFrame:
    """`(stream, file, line, text)` for every line of every file of the package; a file is one task."""
    pairs = [(stream, f) for stream in package.streams for f in package.stream_files[stream]]
    pairs += [(None, f) for f in package.files]
    for _, relative in pairs:
        if _GLOB_CHARS.search(str(package.path_of(relative))):
            raise PackageError(package.load_id, "file names may not contain * ? [ ] { }", relative)
    frames = [read_file_lines(spark, str(package.path_of(rel)), stream, rel) for stream, rel in pairs]
    return reduce(DataFrame.unionByName, frames)


def read_file_lines(spark: SparkSession, path: str, stream: str | None, relative: str) -> DataFrame:
    """`(stream, file, line, text)` of one file, numbered from 1 (terminators as `split_lines` has them).

    A file Spark reads in one partition (every gzip file, small plain ones) is streamed line by line
    and numbered by its position in that partition; a plain file Spark would split is read whole and split.
    """
    labels = [F.lit(stream).cast("string").alias(STREAM), F.lit(relative).alias(FILE)]
    streamed = spark.read.option("lineSep", "\n").text(path)
    if streamed.rdd.getNumPartitions() != 1:  # planning only: lists one file, runs no job
        whole = spark.read.text(path, wholetext=True)
        return split_lines(whole.select(*labels, F.col("value").alias(CONTENT)))
    numbered = streamed.select(*labels, (_position_in_partition() + 1).alias(LINE), F.col("value").alias(TEXT))
    return trim_terminators(numbered)


def _position_in_partition() -> Column:
    """0, 1, 2, ... over the rows of the task's partition, in read order (no shuffle may come before it)."""
    partition_start = F.shiftleft(F.spark_partition_id().cast(T.LongType()), 33)
    return F.monotonically_increasing_id() - partition_start


def unreadable_file(package: LoadPackage, error: Exception) -> PackageError | None:
    """A PackageError naming the file when `error` is Spark failing to read one of the package's files."""
    message = str(error)
    if "FAILED_READ_FILE" not in message and "EOFException" not in message:
        return None
    found = _FAILED_FILE.search(message)
    relative = None
    if found:
        failed = unquote(found.group(1))
        relative = next((f for f in package.all_files() if failed.endswith(f)), None)
    cause = "truncated or corrupt (e.g. an incomplete gzip stream)" if "EOF" in message else "unreadable"
    return PackageError(package.load_id, f"file is {cause}; nothing of this package was committed", relative)
