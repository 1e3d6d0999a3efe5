"""Helpers for the dedup/SCD tests: packages and catalogs from the JSON cases, rows as comparable dicts."""
from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame

from normalization_core.columns import NATIVE as N
from normalization_core.configuration.config import LakenormConfig, parse_config

STREAM = "items"
SPECIAL = {"valid_from": N.valid_from, "valid_to": N.valid_to, "is_current": N.is_current, "load_id": N.load_id}


def catalog_doc(case: dict[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "stream": {"name": STREAM, "json_schema": {"type": "object", "properties": case["schema"]}},
        "sync_mode": "incremental", "destination_sync_mode": "append_dedup", "primary_key": case["primary_key"]}
    if case.get("cursor_field"):
        entry["cursor_field"] = case["cursor_field"]
    return {"streams": [entry]}


def write_package(landing: Path, package: dict[str, Any]) -> None:
    folder = landing / package["load_id"]
    (folder / STREAM).mkdir(parents=True)
    lines = [json.dumps(r) for r in package["records"]]
    (folder / STREAM / "part-00000.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    manifest = {"load_id": package["load_id"], "created_at": package["created_at"], "source": "src",
                "format": "records", "streams": {STREAM: {"files": [f"{STREAM}/part-00000.jsonl"],
                                                           "records": len(lines)}}}
    (folder / "_manifest.json").write_text(json.dumps(manifest), encoding="utf-8")


def case_config(tmp_path: Path, case: dict[str, Any], **source: Any) -> LakenormConfig:
    """A source `src` whose landing holds the case's packages and whose catalog declares its stream; `source`:
    more of the source's settings."""
    (tmp_path / "landing").mkdir()
    (tmp_path / "catalog.json").write_text(json.dumps(catalog_doc(case)), encoding="utf-8")
    for package in case["packages"]:
        write_package(tmp_path / "landing", package)
    return parse_config({"warehouse": "wh", "sources": [
        {"name": "src", "landing": "landing", "catalog": "catalog.json", **source}]}, base_dir=tmp_path)


def plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return value


def projected(df: DataFrame, expected: list[dict[str, Any]]) -> tuple[list[dict], list[dict]]:
    """(actual, expected) rows on the expected rows' columns, both sorted the same way."""
    keys = list(expected[0]) if expected else []
    rows = df.select(*[SPECIAL.get(k, k) for k in keys]).collect()  # a handful of test rows
    actual = [{k: plain(v) for k, v in zip(keys, r)} for r in rows]
    order = lambda rows: sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))  # noqa: E731
    return order(actual), order([{k: r.get(k) for k in keys} for r in expected])


def table_rows(df: DataFrame, drop: tuple[str, ...] = (N.normalized_at,)) -> list[str]:
    """Every row of a table as sorted JSON text (for whole-table equality), without `drop` columns."""
    kept = sorted(c for c in df.columns if c not in drop)
    return sorted(json.dumps(r.asDict(recursive=True), sort_keys=True, default=str)
                  for r in df.select(*kept).collect())  # small test tables
