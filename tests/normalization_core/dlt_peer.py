"""Real dlt (PyPI) run on records in memory, its tables read back: the reference for the `dlt` convention."""
from __future__ import annotations

import json
import os
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

DLT_SPARK_TYPES = {"text": "string", "bigint": "bigint", "double": "double", "bool": "boolean",
                   "timestamp": "timestamp", "date": "date", "json": "string", "decimal": "decimal(38,0)"}
"""Spark type of each dlt data type as lakenorm's `dlt` convention writes it."""
LINKS = ("_dlt_list_idx",)
"""dlt system columns compared by value (the row keys differ by design: dlt's are random)."""


def write_package(landing: Path, load_id: str, created_at: str, records: dict[str, list[dict]],
                  source: str = "chain") -> None:
    """The same records as a lakenorm load package of `source`."""
    folder = landing / load_id
    folder.mkdir(parents=True)
    for stream, rows in records.items():
        (folder / f"{stream}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "_manifest.json").write_text(json.dumps({
        "load_id": load_id, "created_at": created_at, "source": source, "format": "records",
        "streams": {s: {"files": [f"{s}.jsonl"]} for s in records}}))


def data_columns(types: dict[str, str]) -> dict[str, str]:
    """Columns compared with dlt's: data columns and `LINKS`."""
    return {c: t for c, t in types.items() if not c.startswith("_dlt_") or c in LINKS}


def comparable(rows: list[dict], columns: list[str]) -> list[tuple]:
    return sorted((tuple(_naive_utc(row.get(c)) for c in columns) for row in rows), key=repr)


def _naive_utc(value: Any) -> Any:
    """dlt's timestamps are UTC-aware, Spark's are UTC wall clock (the session time zone is UTC)."""
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(timezone.utc).replace(tzinfo=None)
    return value


def run_dlt(workdir: Path, loads: list[dict[str, list[dict]]], hints: dict[str, dict] | None = None,
            naming: str = "snake_case", settings: dict | None = None) -> dict[str, Any]:
    """Each load ({stream: records}) as one `pipeline.run` into a parquet filesystem destination.

    `hints`: `dlt.resource` arguments per stream (`write_disposition`, `primary_key`, `columns`, ...); a
    `merge` stream is written as a Delta table, the filesystem destination's only format that merges.
    `naming`: dlt's naming convention (`schema.naming`); `settings`: the schema's `detections` and
    `preferred_types`, as lakenorm's source `settings`.
    Returns {table: {"types": {column: dlt data_type}, "rows": [row dicts]}} for data and system tables.
    """
    import dlt

    os.environ.update({"DLT_DATA_DIR": str(workdir / "data"), "DLT_PIPELINES_DIR": str(workdir / "pipelines"),
                       "RUNTIME__DLTHUB_TELEMETRY": "false"})
    bucket = workdir / "tables"
    pipeline = dlt.pipeline(pipeline_name="peer", dataset_name="ds",
                            destination=dlt.destinations.filesystem(bucket_url=bucket.resolve().as_uri()))
    os.environ["SCHEMA__NAMING"] = naming
    try:
        for i, load in enumerate(loads):
            resources = [dlt.resource(records, name=stream, **_resource_args((hints or {}).get(stream)))
                         for stream, records in load.items()]
            schema = _schema(dlt, settings) if settings and i == 0 else None
            pipeline.run(resources, loader_file_format="parquet", schema=schema)
    finally:
        del os.environ["SCHEMA__NAMING"]
    return _tables(pipeline, bucket)


def run_dlt_merge(workdir: Path, stream: str, loads: list[list[dict]], strategy: str, primary_key: str
                  ) -> dict[str, list[dict]]:
    """Each load as one `pipeline.run` of `stream` under dlt's merge `strategy` (`delete-insert`, `scd2`, `upsert`)
    into DuckDB, the destination that runs all three. Returns {table: [row dicts]} of the stream's tables."""
    import dlt
    import duckdb

    os.environ.update({"DLT_DATA_DIR": str(workdir / "data"), "DLT_PIPELINES_DIR": str(workdir / "pipelines"),
                       "RUNTIME__DLTHUB_TELEMETRY": "false"})
    database = workdir / "peer.duckdb"
    pipeline = dlt.pipeline(pipeline_name=f"merge_{strategy.replace('-', '_')}", dataset_name="ds",
                            destination=dlt.destinations.duckdb(str(database)))
    for records in loads:
        pipeline.run(dlt.resource(records, name=stream, primary_key=primary_key,
                                  write_disposition={"disposition": "merge", "strategy": strategy}))
    with duckdb.connect(str(database), read_only=True) as connection:
        tables = [t for t in pipeline.default_schema.data_table_names() if t == stream or t.startswith(f"{stream}__")]
        return {t: connection.sql(f'SELECT * FROM ds."{t}"').to_arrow_table().to_pylist() for t in tables}


def _tables(pipeline: Any, bucket: Path) -> dict[str, Any]:
    import pyarrow.parquet as pq

    schema = pipeline.default_schema
    tables = {}
    for name in schema.tables:
        folder = bucket / "ds" / name
        if name == "_dlt_pipeline_state" or not folder.is_dir():
            continue
        types = {c: spec["data_type"] for c, spec in schema.get_table_columns(name).items()}
        tables[name] = {"types": types, "rows": _rows(folder, pq)}
    return tables


def _schema(dlt: Any, settings: dict) -> Any:
    schema = dlt.Schema("peer")
    for detection in list(schema.settings.get("detections") or []):
        schema.remove_type_detection(detection)
    for detection in settings.get("detections", ["iso_timestamp"]):
        schema.add_type_detection(detection)
    schema.update_preferred_types(settings.get("preferred_types") or {})
    return schema


def _resource_args(hints: dict | None) -> dict:
    args = {"write_disposition": "append", **(hints or {})}
    disposition = args["write_disposition"]  # "merge", or {"disposition": "merge", "strategy": "scd2"}
    if (disposition.get("disposition") if isinstance(disposition, dict) else disposition) == "merge":
        args["table_format"] = "delta"
    return args


def _rows(folder: Path, pq: Any) -> list[dict]:
    if (folder / "_delta_log").is_dir():
        from deltalake import DeltaTable

        return DeltaTable(str(folder)).to_pyarrow_table().to_pylist()
    rows: list[dict] = []
    for file in sorted(folder.iterdir()):
        if file.suffix == ".parquet":
            rows += pq.read_table(file).to_pylist()
        elif file.name.endswith(".jsonl"):
            rows += [json.loads(line) for line in file.read_text().splitlines() if line.strip()]
    return rows


def _contract_pipeline(workdir: Path, first: dict[str, list[dict]], hints: dict[str, dict] | None = None) -> Any:
    """A pipeline that loaded `first` ({stream: records}) with dlt's default contract (`hints`: as `run_dlt`'s)."""
    import dlt

    os.environ.update({"DLT_DATA_DIR": str(workdir / "data"), "DLT_PIPELINES_DIR": str(workdir / "pipelines"),
                       "RUNTIME__DLTHUB_TELEMETRY": "false"})
    pipeline = dlt.pipeline(pipeline_name="contract", dataset_name="ds", destination=dlt.destinations.filesystem(
        bucket_url=(workdir / "tables").resolve().as_uri()))
    pipeline.run([dlt.resource(records, name=stream, **_resource_args((hints or {}).get(stream)))
                  for stream, records in first.items()], loader_file_format="parquet")
    return pipeline


def dlt_contract_tables(workdir: Path, first: dict[str, list[dict]], second: dict[str, list[dict]],
                        contracts: dict[str, Any], hints: dict[str, dict] | None = None) -> dict[str, Any]:
    """dlt's tables (as `run_dlt`) after `first`, then `second` with each stream under its contract
    (`hints`: `dlt.resource` arguments per stream for both loads, as `run_dlt`'s)."""
    import dlt

    pipeline = _contract_pipeline(workdir, first, hints)
    pipeline.run([dlt.resource(records, name=stream, schema_contract=contracts[stream],
                               **_resource_args((hints or {}).get(stream)))
                  for stream, records in second.items()], loader_file_format="parquet")
    return _tables(pipeline, workdir / "tables")


def dlt_contract_outcome(workdir: Path, first: list[dict], second: list[dict], contract: Any) -> str | None:
    """Run `first` with dlt's default contract, then `second` under `contract` (stream `s`): the entity
    whose contract refused the second load (`tables`, `columns`, `data_type`), None if it loaded."""
    import dlt
    from dlt.common.schema.exceptions import DataValidationError
    from dlt.pipeline.exceptions import PipelineStepFailed

    pipeline = _contract_pipeline(workdir, {"s": first})
    try:
        pipeline.run(dlt.resource(second, name="s", schema_contract=contract), loader_file_format="parquet")
    except PipelineStepFailed as failed:
        error: BaseException | None = failed
        while error is not None and not isinstance(error, DataValidationError):
            error = getattr(error, "exception", None) or error.__cause__ or error.__context__
        if error is not None:
            return error.schema_entity
        found = re.search(r"Contract on `(\w+)` with `contract_mode=freeze` is violated", str(failed))
        if found is None:  # a failure that is not a contract's
            raise
        return found.group(1)
    return None


def table_differences(peer: dict[str, Any], names: list[str], table: Any) -> dict[str, Any]:
    """Where lakenorm's tables (`table(name)`: its DataFrame) differ from dlt's (`peer`, from `run_dlt`), per
    table of `names`: the data columns whose types differ (lakenorm's, dlt's), else those whose values differ."""
    found: dict[str, Any] = {}
    for name in names:
        ours = table(name)
        ours_types = data_columns(dict(ours.dtypes))
        theirs_types = {c: DLT_SPARK_TYPES[t] for c, t in data_columns(peer[name]["types"]).items()}
        theirs_types.update({c: "bigint" for c in LINKS if c in theirs_types})  # dlt: int64 Arrow, lakenorm: bigint
        if ours_types != theirs_types:
            found[name] = {c: (ours_types.get(c), theirs_types.get(c)) for c in sorted(ours_types | theirs_types)
                           if ours_types.get(c) != theirs_types.get(c)}
            continue
        columns = sorted(theirs_types)
        ours_rows = [row.asDict() for row in ours.collect()]  # a few test rows
        if comparable(ours_rows, columns) != comparable(peer[name]["rows"], columns):
            found[name] = [c for c in columns if comparable(ours_rows, [c]) != comparable(peer[name]["rows"], [c])
                           ] or "rows differ"
    return found
