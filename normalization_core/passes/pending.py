"""What a pass has to do: the packages of a source not yet normalized, found by their landing's listing and the
load registry, and the bytes of loads, looked up without Spark (so a process can size its JVM for them)."""
from __future__ import annotations

import os
from collections.abc import Sequence
from functools import partial

from pyspark.sql import SparkSession

from normalization_core.configuration.config import LakenormConfig, SourceConfig
from normalization_core.errors import LakenormError, UnknownLoadError
from normalization_core.inputs import source_input
from normalization_core.inputs.landing import listed_since_last_pass
from normalization_core.io.load_packages import Discovery, LoadPackage
from normalization_core.io.registry import registered_streams
from normalization_core.io.storage import Landing, StorePath
from normalization_core.plans.source_tables import SourceTables


def pending_packages(spark: SparkSession, config: LakenormConfig, source: SourceConfig) -> Discovery:
    """Complete packages not yet normalized, in arrival order (plus the rejected ones and the files still settling):
    the landing listed from where the last pass's listing ended (`inputs.package_listing`), the registry read for
    the listed load IDs alone."""
    kind = source_input(source)
    if kind.uses_ledger:  # the file ledger already left out what was normalized
        return kind.discover(config, source)
    tables = SourceTables(config, source)
    return listed_since_last_pass(config, source, partial(_normalized, spark, tables),
                                  done_before=lambda load_ids: set(_registered(spark, tables, load_ids))).discovery


def _normalized(spark: SparkSession, tables: SourceTables, packages: Sequence[LoadPackage]) -> set[str]:
    """The load IDs of `packages` with every stream registered as normalized."""
    registered = _registered(spark, tables, [p.load_id for p in packages])
    return {p.load_id for p in packages if set(p.streams) <= registered.get(p.load_id, set())}


def _registered(spark: SparkSession, tables: SourceTables, load_ids: Sequence[str]) -> dict[str, set[str]]:
    return registered_streams(spark, tables.registry_path, load_ids, tables.storage_options(tables.registry_path))


def loads_input_bytes(config: LakenormConfig, source_name: str, load_ids: Sequence[str]) -> int | None:
    """`source_input_bytes` of the source named `source_name`."""
    return source_input_bytes(SourceTables.of(config, source_name), load_ids)


def source_input_bytes(tables: SourceTables, load_ids: Sequence[str]) -> int | None:
    """Bytes of the load packages' files, looked up without Spark (a process that will normalize only these can
    start its JVM for a small input: `build_spark_session(input_bytes=...)`); None when one cannot be found."""
    try:
        return input_bytes([find_package(tables, load_id) for load_id in dict.fromkeys(load_ids)])
    except LakenormError:
        return None


def pending_input_bytes(config: LakenormConfig, source_name: str) -> int | None:
    """At most the bytes of the loads `pending_packages` will find, looked up without Spark: the complete packages
    not in the source's file ledger (manifest packages: those the next pass's listing will read, normalized or not);
    None when one cannot be sized."""
    source = SourceTables.of(config, source_name).source
    try:
        found = listed_since_last_pass(config, source, lambda packages: set(), keep=False).discovery
    except (LakenormError, OSError):
        return None
    return input_bytes(list(found.packages))


def input_bytes(packages: list[LoadPackage]) -> int | None:
    """Bytes of the packages' files (listed sizes: metadata), None when a file cannot be looked at."""
    try:
        return sum(sum(e.size for e in p.entries) if p.entries else
                   sum(_size(p.path_of(f)) for f in p.all_files()) for p in packages)
    except OSError:
        return None


def _size(path: Landing) -> int:
    return path.size() if isinstance(path, StorePath) else os.path.getsize(path)


def find_package(tables: SourceTables, load_id: str) -> LoadPackage:
    source = tables.source
    package = source_input(source).find(tables.config, source, load_id)
    if package is None:
        raise UnknownLoadError(source.name, load_id, str(source.landing))
    return package
