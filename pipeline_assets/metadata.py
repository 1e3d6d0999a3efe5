"""Materialization metadata of each table (SPEC §8): row counts, schema, column lineage, NULLED counts.

Table-wide figures come from Delta metadata (log stats and schema); per-run figures from the
counters the pipeline gathered while writing. Nothing here reads table data.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable

import dagster as dg
from pyspark.sql import SparkSession
from pyspark.sql import types as T

from normalization_core.api import (
    LoadResult,
    StreamResult,
    StreamSchema,
    SystemNames,
    TableSchema,
    find_table,
    lineage,
    root_table,
    table_rows_and_schema,
)

_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def json_path(keys: list[str]) -> str:
    """`.a.b` for plain keys, `['odd key']` otherwise."""
    return "".join(f".{k}" if _PLAIN_KEY.match(k) else "[" + repr(k) + "]" for k in keys)


def table_json_path(schema: StreamSchema, table: str) -> str:
    """JSONPath of a table's rows in a record: `$` for the root, `$.line_items[*].discounts[*]` for a child."""
    return "$" + "".join(json_path(t["path"]) + "[*]" for t in lineage(schema, table)[1:])


def column_json_paths(schema: StreamSchema, table: TableSchema) -> dict[str, str]:
    """Each data column's JSONPath in the raw record (`_norm_data`)."""
    rows = table_json_path(schema, table["name"])
    return {c["name"]: rows + json_path(c["path"]) for c in table["columns"]}


def column_schema(columns: Iterable[tuple[str, str]], json_paths: dict[str, str] | None = None) -> dg.TableSchema:
    """Dagster's schema of (name, type) columns; with `json_paths`, data columns say which JSON path they
    come from. The one place a `dg.TableSchema` is built."""
    paths = json_paths or {}
    return dg.TableSchema(columns=[
        dg.TableColumn(name, data_type, description=f"from {paths[name]}" if name in paths else None)
        for name, data_type in columns])


def spark_columns(schema: T.StructType) -> list[tuple[str, str]]:
    """A Spark schema's (name, type) columns, types as Spark spells them (`bigint`, `array<string>`)."""
    return [(f.name, f.dataType.simpleString()) for f in schema.fields]


def document_columns(table: TableSchema) -> list[tuple[str, str]]:
    """A table document's (name, type) data columns."""
    return [(c["name"], c["data_type"]) for c in table["columns"]]


def column_lineage(schema: StreamSchema, table: TableSchema, names: SystemNames, raw_key: dg.AssetKey,
                   key_of: Callable[[str], dg.AssetKey], upstream: str | None = None) -> dg.TableColumnLineage:
    """Data columns come from the raw `_norm_data` JSON; a child's keys from its parent's keys, so every
    column's lineage names the asset's parent in the graph (raw, history or parent table).

    `key_of`: a table's asset key (`TableKeys`). `upstream`: the table's parent in the graph
    (`Disposition.graph_parent`; None: raw). A root table with one (an `append_dedup` stream's current table)
    takes each column from it; a child's keys come from it."""
    data = [dg.TableColumnDep(raw_key, names.data)]
    deps = {c["name"]: data for c in table["columns"]}
    deps[names.meta] = data
    root = root_table(schema)["name"]
    if table["parent"] is None:
        deps.update({
            names.raw_id: [dg.TableColumnDep(raw_key, names.raw_id)],
            names.row_id(table): [dg.TableColumnDep(raw_key, names.raw_id)],
            names.extracted_at: [dg.TableColumnDep(raw_key, names.extracted_at)],
            names.load_id: [dg.TableColumnDep(raw_key, names.load_id)],
        })
        if upstream is not None:  # the current table: each column is its history's newest version
            deps = {column: [dg.TableColumnDep(key_of(upstream), column)] for column in deps}
        return dg.TableColumnLineage(deps_by_column=deps)
    parent = table["parent"]
    parent_asset = key_of(upstream or parent)
    parent_key = dg.TableColumnDep(parent_asset, names.row_id(find_table(schema, parent)))
    root_key = parent_key if parent == root else dg.TableColumnDep(parent_asset, names.root_id)  # via the parent
    deps.update({
        names.parent_key(table): [parent_key],
        names.row_id(table): [parent_key],
        names.root_id: [root_key],
        names.load_id: [dg.TableColumnDep(parent_asset, names.load_id)],
        names.list_idx: data,
    })
    return dg.TableColumnLineage(deps_by_column=deps)


def table_state(spark: SparkSession, path: str, storage_options: dict[str, str] | None,
                json_paths: dict[str, str] | None = None) -> dict:
    """Rows and schema of the table after the run, from Delta metadata."""
    rows, schema = table_rows_and_schema(spark, path, storage_options)
    return {"dagster/row_count": rows, "dagster/column_schema": column_schema(spark_columns(schema), json_paths)}


def typed_load_counts(results: list[LoadResult], stream: str, table: str) -> dict[str, dict] | None:
    """Per load of the run: rows written, NULLED counts and what the schema contract discarded of one typed
    table (each partition's own figures, SPEC §8); None if no load of the run wrote the table."""
    if not any(stream in r.streams and table in r.streams[stream].typed_rows for r in results):
        return None
    counts = {}
    for r in results:
        result = r.streams.get(stream)
        rows = result.typed_rows.get(table, 0) if result is not None else 0
        values, nulled_rows = _nulled(result, table) if result is not None else (0, 0)
        discarded = result.discarded.get(table) if result is not None else None
        counts[r.load_id] = {"dagster/partition_row_count": rows, "rows_written": rows, "load_id": r.load_id,
                             "nulled_values": values, "nulled_rows": nulled_rows,
                             "discarded_rows": discarded.rows if discarded else 0,
                             "discarded_values": discarded.values if discarded else 0}
    return counts


def raw_load_counts(results: list[LoadResult], stream: str) -> dict[str, dict] | None:
    """Per load of the run: lines written, rejected and quarantined; None if no load held the stream."""
    if not any(stream in r.streams for r in results):
        return None
    counts = {}
    for r in results:
        result = r.streams.get(stream)
        lines = result.raw_lines if result is not None else 0
        counts[r.load_id] = {
            "dagster/partition_row_count": lines, "rows_written": lines, "load_id": r.load_id,
            "rejected_lines": result.rejected_lines if result is not None else 0,
            "expected_records": (result.expected_records or 0) if result is not None else 0,
            "quarantined_lines": r.quarantined_lines}
    return counts


def _nulled(result: StreamResult, table: str) -> tuple[int, int]:
    counts = result.nulled.get(table)
    return (counts.values, counts.rows) if counts is not None else (0, 0)
