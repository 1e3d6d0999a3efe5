"""`overwrite`: the stream's typed tables hold its newest load alone (SPEC §6)."""
from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from normalization_core import columns as C
from normalization_core.dispositions.append import Append
from normalization_core.dispositions.base import TablesOfSource
from normalization_core.io.load_packages import LoadPackage
from normalization_core.io.registry import is_newest_load


class Overwrite(Append):
    """Each load replaces the tables; a pass of several loads writes the newest, if no newer one was normalized."""

    name = "overwrite"
    summary = "each load replaces the table"
    whole_tables = True

    def loads_to_write(self, spark: SparkSession, tables: TablesOfSource, stream: str,
                       packages: Sequence[LoadPackage]) -> list[str]:
        newest = max(packages, key=lambda p: p.arrival_key)
        return [newest.load_id] if is_newest_load(spark, tables.registry_path, stream, newest.arrival_key) else []

    def loads_to_rebuild(self, loads: DataFrame) -> DataFrame:
        return loads.orderBy(F.col(C.LOADS_CREATED_AT).desc(), F.col(C.LOADS_LOAD_ID).desc()).limit(1)
