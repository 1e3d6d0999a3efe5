"""Reading a load package's files into Spark, one row per line, without a driver-side pass."""
from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from normalization_core.errors import PackageError
from normalization_core.io.load_packages import LoadPackage
from normalization_core.io.storage import Landing
from normalization_core.runtime.connect import union_all
from normalization_core.runtime.settings import byte_size
from normalization_core.transform.raw import CONTENT, FILE, LINE, STREAM, TEXT, line_texts, split_lines

_FAILED_FILE = re.compile(r"error while reading file (\S+?)\.?\s")
_GLOB_CHARS = re.compile(r"[*?\[\]{}]")
_UNSPLITTABLE = (".gz",)
"""Compressed files Spark reads in one partition whatever their size (`packages.DATA_SUFFIXES`: `.jsonl.gz`)."""


def read_package_lines(spark: SparkSession, package: LoadPackage) -> DataFrame:
    """`(stream, file, line, text, bytes)` for every line of every file of the package; a file is one task."""
    pairs = [(stream, f) for stream in package.streams for f in package.stream_files[stream]]
    pairs += [(None, f) for f in package.files]
    for _, relative in pairs:
        if _GLOB_CHARS.search(str(package.path_of(relative))):
            raise PackageError(package.load_id, "file names may not contain * ? [ ] { }", relative)
    unsplit = unsplit_bytes(spark)
    frames = [read_file_lines(spark, str(package.path_of(rel)), stream, rel, _size(package.path_of(rel)), unsplit)
              for stream, rel in pairs]
    return union_all(frames)


def read_file_lines(spark: SparkSession, path: str, stream: str | None, relative: str, size: int | None = None,
                    unsplit: int | None = None) -> DataFrame:
    """`(stream, file, line, text, bytes)` of one file, numbered from 1 (as `line_texts` has them: valid UTF-8,
    the exact bytes of a line that is not in `bytes`).

    A file Spark reads in one partition (every gzip file, small plain ones) is streamed line by line
    and numbered by its position in that partition; a plain file Spark may split is read whole and split.
    `size`: the file's bytes (else looked up, for a local path); `unsplit`: `unsplit_bytes(spark)`.
    """
    labels = [F.lit(stream).cast("string").alias(STREAM), F.lit(relative).alias(FILE)]
    if not _one_partition(path, Path(path).stat().st_size if size is None else size,
                          unsplit_bytes(spark) if unsplit is None else unsplit):
        whole = spark.read.text(path, wholetext=True)
        return split_lines(whole.select(*labels, F.col("value").alias(CONTENT)))
    streamed = spark.read.option("lineSep", "\n").text(path)
    numbered = streamed.select(*labels, (_position_in_partition() + 1).alias(LINE), F.col("value").alias(TEXT))
    return line_texts(numbered)


def unsplit_bytes(spark: SparkSession) -> int:
    """The most bytes of a plain file Spark surely reads as one partition, whatever its parallelism.

    Spark cuts files into splits of `min(maxPartitionBytes, max(openCostInBytes, total bytes / cores))`
    (`FilePartition.maxSplitBytes`), so a file no larger than both settings is one split, one partition. Read from
    the session's settings (no RDD, which Spark Connect lacks)."""
    return min(byte_size(spark.conf.get("spark.sql.files.maxPartitionBytes")),
               byte_size(spark.conf.get("spark.sql.files.openCostInBytes")))


def _one_partition(path: str, size: int, unsplit: int) -> bool:
    """A gzip file is never split (Hadoop's gzip codec cannot start mid-stream); a plain one up to `unsplit`."""
    return path.endswith(_UNSPLITTABLE) or size <= unsplit


def _size(path: Landing) -> int:
    return path.stat().st_size if isinstance(path, Path) else path.size()




def _position_in_partition() -> Column:
    """0, 1, 2, ... over the rows of the task's partition, in read order (no shuffle may come before it)."""
    partition_start = F.shiftleft(F.spark_partition_id().cast("bigint"), 33)
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
