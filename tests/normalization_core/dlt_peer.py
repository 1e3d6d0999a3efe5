"""Real dlt (PyPI) run on records in memory, its tables read back: the reference for the `dlt` convention."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

DLT_SPARK_TYPES = {"text": "string", "bigint": "bigint", "double": "double", "bool": "boolean",
                   "timestamp": "timestamp", "date": "date", "json": "string", "decimal": "decimal(38,0)"}
"""Spark type of each dlt data type as lakenorm's `dlt` convention writes it."""


def run_dlt(workdir: Path, loads: list[dict[str, list[dict]]]) -> dict[str, Any]:
    """Each load ({stream: records}) as one `pipeline.run` into a parquet filesystem destination.

    Returns {table: {"types": {column: dlt data_type}, "rows": [row dicts]}} for data and system tables.
    """
    import dlt
    import pyarrow.parquet as pq

    os.environ.update({"DLT_DATA_DIR": str(workdir / "data"), "DLT_PIPELINES_DIR": str(workdir / "pipelines"),
                       "RUNTIME__DLTHUB_TELEMETRY": "false"})
    bucket = workdir / "tables"
    pipeline = dlt.pipeline(pipeline_name="peer", dataset_name="ds",
                            destination=dlt.destinations.filesystem(bucket_url=bucket.resolve().as_uri()))
    for load in loads:
        resources = [dlt.resource(records, name=stream, write_disposition="append") for stream, records in load.items()]
        pipeline.run(resources, loader_file_format="parquet")
    schema = pipeline.default_schema
    tables = {}
    for name in schema.tables:
        folder = bucket / "ds" / name
        if name == "_dlt_pipeline_state" or not folder.is_dir():
            continue
        types = {c: spec["data_type"] for c, spec in schema.get_table_columns(name).items()}
        tables[name] = {"types": types, "rows": _rows(folder, pq)}
    return tables


def _rows(folder: Path, pq: Any) -> list[dict]:
    rows: list[dict] = []
    for file in sorted(folder.iterdir()):
        if file.suffix == ".parquet":
            rows += pq.read_table(file).to_pylist()
        elif file.name.endswith(".jsonl"):
            import json
            rows += [json.loads(line) for line in file.read_text().splitlines() if line.strip()]
    return rows
