"""The file ledger of a source (`_norm_files`, SPEC §2.4): producer files already normalized and their load.

Written with Spark after the load registry (a crash in between re-normalizes the same load ID,
which is idempotent); read without Spark (small metadata) so discovery and the sensor stay light.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pyspark.sql import SparkSession
from pyspark.sql import types as T

from normalization_core.io.load_writes import replace_loads
from normalization_core.io.storage import open_delta_table
from normalization_core.inputs.listing import FileEntry
from normalization_core.io.local_rows import local_rows

LEDGER_SCHEMA = T.StructType([
    T.StructField("load_id", T.StringType()),
    T.StructField("file", T.StringType()),
    T.StructField("size", T.LongType()),
    T.StructField("modified_ms", T.LongType()),
])


@dataclass(frozen=True)
class LedgerEntry:
    load_id: str
    file: FileEntry


def ledger_table(loads_table: str) -> str:
    """`_norm_loads` -> `_norm_files` (`_dlt_files`, `_airbyte_files`)."""
    return loads_table.rsplit("_", 1)[0] + "_files"


def read_ledger(path: str, storage_options: dict[str, str] | None = None) -> dict[str, LedgerEntry]:
    """Files already normalized by path; empty when the ledger does not exist yet."""
    ledger = open_delta_table(path, storage_options)
    if ledger is None:
        return {}
    table = ledger.to_pyarrow_table(columns=["load_id", "file", "size", "modified_ms"])
    return {row["file"]: LedgerEntry(row["load_id"], FileEntry(row["file"], row["size"], row["modified_ms"]))
            for row in table.to_pylist()}  # metadata: one row per producer file


def record_files(spark: SparkSession, path: str, load_id: str, files: Sequence[FileEntry]) -> None:
    """Replace the ledger rows of one load with its files (one commit; running it again changes nothing)."""
    rows = [(load_id, f.path, f.size, f.modified_ms) for f in files]
    replace_loads(local_rows(spark, rows, LEDGER_SCHEMA), path, "load_id", [load_id])
