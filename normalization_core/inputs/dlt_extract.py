"""The `dlt_extract` input kind: load packages as dlt's `pipeline.extract()` leaves them (SPEC §2.4).

Point `landing` at `<pipelines_dir>/<pipeline_name>/normalize/extracted/`: dlt moves a package there
(one rename) only once it is extracted whole, so a folder there is complete and is read at once, without
waiting `settle_seconds` (see `DltExtract.settles`). Each `<load_id>/` holds
`new_jobs/<table>.<file_id>.<n>.typed-jsonl[.gz]` (each line a JSON array of items, typed values marked
with a private-use character, see `decode_typed`), `schema.json` and `load_package_state.json`.
"""
from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from normalization_core.configuration.config import SourceConfig
from normalization_core.schema.stream_settings import StreamSettings
from normalization_core.inputs.base import FileInput, Grouping, Member, from_ms
from normalization_core.inputs.listing import FileEntry, list_files, read_text
from normalization_core.io.load_packages import LOAD_ID_PATTERN, LoadPackage, RejectedPackage
from normalization_core.io.reader import read_package_lines
from normalization_core.io.storage import Landing, StorePath
from normalization_core.transform import raw as R
from normalization_core.transform.json_text import array_elements

_JOB = re.compile(r"^(?P<table>[^/]+)\.[0-9A-Za-z]+\.\d+\.typed-jsonl(?:\.gz)?$")
_TYPED_MARK = "(?<!\\\\)\"[\uf026-\uf02d]"
"""dlt's typed JSON: a string value opening with U+F026..U+F02D (decimal, date-time, date, uuid, hex bytes,
base64 bytes, wei, time) keeps its text after the mark; the value is that text, typed by the schema."""
_DLT_TYPES = {"text": {"type": "string"}, "bigint": {"type": "integer"}, "double": {"type": "number"},
              "bool": {"type": "boolean"}, "timestamp": {"type": "string", "format": "date-time"},
              "date": {"type": "string", "format": "date"}, "time": {"type": "string", "format": "time"},
              "decimal": {"type": "number"}, "wei": {"type": "number"}, "binary": {"type": "string"},
              "json": {}}


def decode_typed(text: Column) -> Column:
    """dlt's typed-jsonl values as plain JSON: the type marks are dropped (on the executors)."""
    return F.regexp_replace(text, _TYPED_MARK, "\"")


def package_schema(landing: Landing, load_id: str) -> dict[str, Any]:
    try:
        return json.loads(read_text(landing, f"{load_id}/schema.json"))
    except (OSError, json.JSONDecodeError):
        return {}


class DltExtract(FileInput):
    name = "dlt_extract"
    suffixes = (".typed-jsonl", ".typed-jsonl.gz")

    def settles(self, source: SourceConfig) -> bool:
        """No settling in a local `extracted/` folder: dlt's rename into it is the completion signal.

        Checked against dlt 1.31's code: `pipeline.extract()` writes a package under a folder of its own
        extract run, `<pipelines_dir>/<pipeline>/normalize/<8 random chars>/new/<load_id>/` (`ExtractStorage`
        in `dlt/extract/storage.py`: item writers, `schema.json`, `load_package_state.json`), closes its
        writers (`Extract.manage_writers`, `dlt/extract/extract.py`), and only then, in
        `Extract.commit_packages` -> `ExtractStorage.commit_new_load_package`, saves the schema and moves the
        package folder into `normalize/extracted/<load_id>` with `FileStorage.rename_tree`, one `os.rename` of
        the folder (atomic on a local file system). A job file is therefore never seen half-written under
        `extracted/`, though its modification time is the write's, seconds before: settling would only delay.
        dlt falls back to moving file by file (`rename_tree_files`, leaves first, the package root's
        `schema.json` after every job folder) only when that rename fails with too many open files: a
        package without its `schema.json` yet is in flight (`members`), so that fallback is covered too.
        A landing in an object store is a copy made by another tool, file by file: there files settle."""
        return isinstance(source.landing, StorePath)

    def members(self, source: SourceConfig, files: list[FileEntry]) -> Grouping:
        grouping, schemas = Grouping(), {}
        for entry in files:
            found = _JOB.match(entry.name)
            if len(entry.parts) != 3 or entry.parts[1] != "new_jobs" or not found:
                continue  # not a job file of an extracted package
            load_id, table = entry.parts[0], found.group("table")
            if load_id not in schemas:
                in_flight = not (source.landing / load_id / "schema.json").is_file()
                schemas[load_id] = None if in_flight else package_schema(source.landing, load_id)
            if schemas[load_id] is None:
                continue  # its package is still being moved in (no schema.json yet): read at a later listing
            tables = schemas[load_id].get("tables", {})
            if table not in tables or not LOAD_ID_PATTERN.match(load_id):
                why = "is not a valid load ID" if table in tables else \
                    f"holds table {table!r}, which the package schema ({load_id}/schema.json) does not have"
                grouping.rejected.append(RejectedPackage(load_id, Path(entry.path), f"job file {entry.path!r} {why}; "
                                                         "not read (nothing of it is lost: it stays in the landing)"))
                continue
            grouping.members.append(Member(entry, load_id, table, "dlt", _created_at(source.landing, load_id, entry)))
        return grouping

    def package(self, source: SourceConfig, load_id: str, members: Sequence[Member]) -> LoadPackage:
        tables: dict[str, list[str]] = {}
        for m in members:
            tables.setdefault(m.stream, []).append(m.file.path)  # type: ignore[arg-type]
        base = members[0].file.parts[0]
        return LoadPackage(
            load_id=load_id, created_at=min(m.created_at for m in members), source=source.name, format="dlt",
            folder=source.landing, stream_files={t: tuple(f) for t, f in tables.items()},
            entries=tuple(m.file for m in members), state=_pipeline_state(source.landing, base))

    def classify(self, spark: SparkSession, package: LoadPackage) -> DataFrame:
        lines = read_package_lines(spark, package)
        is_array = F.ltrim(F.col(R.TEXT)).startswith("[")
        items = F.when(is_array, F.coalesce(array_elements(F.col(R.TEXT)), F.from_json(F.col(R.TEXT), "array<string>")))
        items = F.coalesce(items, F.array(F.col(R.TEXT)))
        exploded = lines.select(R.STREAM, R.FILE, R.LINE, R.BYTES, F.posexplode(items).alias("item", "value"))
        exploded = exploded.select(R.STREAM, R.FILE, R.LINE, decode_typed(F.col("value")).alias(R.TEXT), R.BYTES,
                                   "item")
        # A line holds several items: the raw id is derived from load ID, file, line and the item's position.
        item_id = R.raw_id(F.lit(package.load_id), F.col(R.FILE), F.concat_ws(".", R.LINE, "item"))
        return R.record_lines(exploded, F.lit(package.created_at).cast("timestamp"), item_id)

    def catalog(self, source: SourceConfig) -> dict[str, StreamSettings]:
        """Hints of the newest package schema: primary key, merge -> append_dedup, column data types."""
        newest = sorted({f.parts[0] for f in list_files(source.landing, ("schema.json",)) if len(f.parts) == 2})
        tables = package_schema(source.landing, newest[-1]).get("tables", {}) if newest else {}
        return {name: _settings(name, table) for name, table in tables.items() if not name.startswith("_dlt")}


def _settings(name: str, table: dict[str, Any]) -> StreamSettings:
    columns = table.get("columns") or {}
    typed = {c: _DLT_TYPES.get(h.get("data_type"), {}) for c, h in columns.items() if h.get("data_type")}
    schema = {"type": "object", "properties": typed} if typed else None
    pk = tuple((c,) for c, h in columns.items() if h.get("primary_key") or h.get("merge_key"))
    cursor = next(((c,) for c, h in columns.items() if h.get("dedup_sort") or h.get("incremental")), ())
    merge = "append_dedup" if pk else "append"  # dlt merges without a key by appending
    mode = {"merge": merge, "replace": "overwrite"}.get(table.get("write_disposition"), "append")
    return StreamSettings(name=name, json_schema=schema, destination_sync_mode=mode, cursor_field=cursor,
                          primary_key=pk)


def _created_at(landing: Landing, load_id: str, entry: FileEntry) -> datetime:
    try:
        state = json.loads(read_text(landing, f"{load_id}/load_package_state.json"))
        return datetime.fromisoformat(state["created_at"]).astimezone(timezone.utc)
    except (OSError, ValueError, KeyError, TypeError):
        try:
            return datetime.fromtimestamp(float(load_id), tz=timezone.utc)
        except ValueError:
            return from_ms(entry.modified_ms)


def _pipeline_state(landing: Landing, load_id: str) -> Any:
    try:
        return json.loads(read_text(landing, f"{load_id}/load_package_state.json")).get("pipeline_state")
    except (OSError, ValueError, AttributeError):
        return None
