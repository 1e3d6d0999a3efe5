"""Reading a load package's files into Spark, one row per line, without a driver-side pass."""
from __future__ import annotations

import re
from functools import reduce
from urllib.parse import unquote

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from normalization_core.errors import PackageError
from normalization_core.io.packages import LoadPackage
from normalization_core.transform.raw import CONTENT, FILE, STREAM, split_lines

_FAILED_FILE = re.compile(r"error while reading file (\S+?)\.?\s")
_GLOB_CHARS = re.compile(r"[*?\[\]{}]")


def read_package_lines(spark: SparkSession, package: LoadPackage) -> DataFrame:
    """`(stream, file, line, text)` for every line of every file of the package.

    Whole files are read as one value each (`wholetext`) so that line numbers are exact; a file
    is one task, so a package parses on as many cores as it has files.
    """
    pairs = [(stream, f) for stream in package.streams for f in package.stream_files[stream]]
    pairs += [(None, f) for f in package.files]
    frames = [_read_file(spark, package, stream, rel) for stream, rel in pairs]
    return split_lines(reduce(DataFrame.unionByName, frames))


def _read_file(spark: SparkSession, package: LoadPackage, stream: str | None, relative: str) -> DataFrame:
    path = str(package.path_of(relative))
    if _GLOB_CHARS.search(path):
        raise PackageError(package.load_id, "file names may not contain * ? [ ] { }", relative)
    return spark.read.text(path, wholetext=True).select(
        F.lit(stream).cast("string").alias(STREAM), F.lit(relative).alias(FILE), F.col("value").alias(CONTENT))


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
