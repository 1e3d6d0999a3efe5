"""A pass over some streams of a load only (a Dagster run of one stream's assets).

Rules (SPEC §3, registry): the registry is per (load, stream), so a pass over streams S replaces the
registry rows of S only. A load is complete, and counts as normalized for discovery, when every stream
of its package is registered; `_dlt_loads` (dlt convention) and the file ledger (producer inputs) are
written only for complete loads. Running the same streams again gives the same tables.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from normalization_core.transform.sql_text import column_name, in_list, string_literal
from normalization_core.io.load_packages import LoadPackage
from normalization_core.io.registry import LoadRecord
from normalization_core.transform import raw as R


def only_streams(package: LoadPackage, streams: Sequence[str]) -> LoadPackage | None:
    """The package narrowed to `streams` (None when it has none of them): per-stream files of other
    streams are not read; files shared by all streams still are, and `without_streams` drops their lines."""
    kept = [s for s in package.streams if s in set(streams)]
    if not kept:
        return None
    return replace(package, stream_files={s: package.stream_files[s] for s in kept},
                   expected_records={s: n for s, n in package.expected_records.items() if s in kept},
                   hints={s: h for s, h in package.hints.items() if s in kept})


def without_streams(lines: DataFrame, streams: Sequence[str]) -> DataFrame:
    """Classified lines without the records of `streams` (states and quarantine are the load's, kept)."""
    if not streams:
        return lines
    other = F.coalesce(~F.col(R.STREAM).isin(list(streams)), F.lit(True))
    return lines.where((F.col(R.KIND) != "record") | other)


def quarantine_predicate(load_column: str, file_column: str, packages: Sequence[LoadPackage]) -> str:
    """The quarantine rows a pass over these (narrowed) packages rewrites: their loads' lines of the
    files it read (quarantined lines of files it did not read stay)."""
    return " OR ".join(f"({column_name(load_column)} = {string_literal(p.load_id)} AND "
                       f"{in_list(file_column, p.all_files())})"
                       for p in packages)


def complete_loads(packages: Sequence[LoadPackage], records: Sequence[LoadRecord],
                   registered: dict[str, dict[str, str | None]]) -> tuple[list[str], list[LoadRecord]]:
    """Load IDs every stream of whose (whole) package is registered once this pass's `records` are,
    and one record per stream of those loads (this pass's, else one standing for the registered row)."""
    done, all_records = [], []
    for package in packages:
        mine = {r.stream: r for r in records if r.load_id == package.load_id}
        before = registered.get(package.load_id, {})
        if not mine or not set(package.streams) <= set(mine) | set(before):
            continue
        first = next(iter(mine.values()))
        others = [replace(first, stream=s, schema_version_hash=h) for s, h in before.items() if s not in mine]
        done.append(package.load_id)
        all_records += [*mine.values(), *others]
    return done, all_records
