"""Which Delta version a load's commit made, per table (SPEC §11): the versions a snapshot of the load reads.

While a pass writes, every commit of its session carries the pass's load IDs in the commit's `userMetadata`
(Delta's `spark.databricks.delta.commitInfo.userMetadata` session setting, applied to DataFrame writes, MERGE
and ALTER alike). Afterwards each table's history, newest first, names the newest commit of a load: its version,
also when other loads' commits landed on the table in between or after (concurrent loads of the same table).
One pass runs at a time per session (its writes run side by side in threads, all of the same loads).
"""
from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager

from deltalake.exceptions import DeltaError
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

from normalization_core.transform.sql_text import table_ref
from normalization_core.io.storage import is_uri, open_delta_table

USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"
TAG_KEY = "lakenorm_load_ids"
RECENT_DEPTH = 4
"""Commits read first (a log file each): a pass's own commit to a table is almost always among them."""
HISTORY_DEPTH = 100
"""Commits of a table looked at, newest first, for a load's own: other writers' commits after it included."""


def commit_tag(load_ids: Sequence[str]) -> str:
    """The `userMetadata` of a pass's commits: `{"lakenorm_load_ids": [...]}`."""
    return json.dumps({TAG_KEY: sorted(load_ids)}, separators=(",", ":"))


def tagged_loads(user_metadata: str | None) -> frozenset[str]:
    """The load IDs a commit's `userMetadata` names (none: a commit lakenorm's passes did not tag)."""
    if not user_metadata or TAG_KEY not in user_metadata:
        return frozenset()
    try:
        found = json.loads(user_metadata).get(TAG_KEY)
    except (ValueError, AttributeError):
        return frozenset()
    return frozenset(map(str, found)) if isinstance(found, list) else frozenset()


def tagged_commits(spark: SparkSession, load_ids: Sequence[str]) -> AbstractContextManager[None]:
    """Every Delta commit of the session in the block carries `commit_tag(load_ids)`; the session's own
    `userMetadata` (if any) is back afterwards."""
    return _commit_metadata(spark, commit_tag(load_ids))


def untagged_commits(spark: SparkSession) -> AbstractContextManager[None]:
    """The commits of the block carry no load IDs (a compaction after a pass belongs to no load), whatever the
    session's `userMetadata` is outside it."""
    return _commit_metadata(spark, None)


@contextmanager
def _commit_metadata(spark: SparkSession, value: str | None) -> Iterator[None]:
    previous = spark.conf.get(USER_METADATA, None)
    _set_metadata(spark, value)
    try:
        yield
    finally:
        _set_metadata(spark, previous)


def _set_metadata(spark: SparkSession, value: str | None) -> None:
    if value is None:
        spark.conf.unset(USER_METADATA)
    else:
        spark.conf.set(USER_METADATA, value)


def committed_versions(spark: SparkSession, path: str, load_ids: Sequence[str],
                       storage_options: dict[str, str] | None = None) -> dict[str, int]:
    """Per load ID, the version of the newest commit to the table at `path` tagged with it (loads without a
    tagged commit among the newest `HISTORY_DEPTH` are left out)."""
    wanted, found = set(load_ids), {}
    for depth in (RECENT_DEPTH, HISTORY_DEPTH):  # the pass's own commits are usually the newest
        for version, user_metadata in _history(spark, path, storage_options, depth):
            for load_id in tagged_loads(user_metadata) & wanted:
                found.setdefault(load_id, version)
        if len(found) == len(wanted):
            break
    return found


def _history(spark: SparkSession, path: str, storage_options: dict[str, str] | None,
             depth: int) -> list[tuple[int, str | None]]:
    """(version, userMetadata) of the newest commits, newest first: read from a local table's log by delta-rs (no
    Spark job), else `DESCRIBE HISTORY` (metadata rows; delta-rs's history of a table on a local S3 server timed out
    listing its log)."""
    if not is_uri(path):
        try:
            table = open_delta_table(path, storage_options)
        except DeltaError:
            table = None
        if table is not None:
            return [(int(c["version"]), c.get("userMetadata")) for c in table.history(depth)
                    if c.get("version") is not None]
    try:
        rows = spark.sql(f"DESCRIBE HISTORY {table_ref(path)} LIMIT {int(depth)}").select(
            "version", "userMetadata").collect()  # commit metadata, not data
    except AnalysisException:
        return []
    return [(int(r[0]), r[1]) for r in rows]
