"""dlt's schema settings (SPEC §5.4) through real dlt and through lakenorm's `dlt` convention: the same records
and settings give the same tables, columns, types and values. Cases: tests/cases/dlt_schema/."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from lakenorm_app import commands
from normalization_core.configuration.config import load_config
from normalization_core.io.delta import read_table

from tests.normalization_core.dlt_peer import DLT_SPARK_TYPES, comparable, data_columns, run_dlt, write_package

pytest.importorskip("dlt")
CASES = Path(__file__).parents[1] / "cases/dlt_schema"
LOAD_IDS = ("1700000000.1", "1700000001.1")


def lakenorm_stream_settings(dlt_args: dict) -> dict:
    """The stream keys of lakenorm's configuration that say what `dlt.resource(...)`'s arguments say."""
    settings = {}
    if dlt_args.get("write_disposition") == "merge":
        settings["destination_sync_mode"] = "append_dedup"
    if "primary_key" in dlt_args:
        settings["primary_key"] = dlt_args["primary_key"]
    if "columns" in dlt_args:
        settings["columns"] = dlt_args["columns"]
    return settings


def run_both(spark, work: Path, case: dict):
    """dlt's tables, and lakenorm's (the CLI over two packages) as {table: DataFrame}."""
    streams = case["streams"]
    loads = [{s: body["loads"][i] for s, body in streams.items()} for i in range(2)]
    peer = run_dlt(work / "dlt", loads, copy.deepcopy({s: body["dlt"] for s, body in streams.items()}),  # dlt edits them
                   naming=case.get("naming", "snake_case"), settings=case.get("settings"))
    (work / "landing").mkdir()
    doc = {"warehouse": "wh", "sources": [{
        "name": "chain", "landing": "landing", "convention": "direct" if case.get("naming") == "direct" else "dlt",
        **({"settings": case["settings"]} if "settings" in case else {}),
        "streams": {s: lakenorm_stream_settings(body["dlt"]) for s, body in streams.items()}}],
        "spark": {"master": "local[2]", "spark.sql.shuffle.partitions": "2"}}
    (work / "lakenorm.yaml").write_text(yaml.safe_dump(doc))
    cfg = load_config(work / "lakenorm.yaml")
    for load_id, second, records in zip(LOAD_IDS, ("20", "21"), loads):
        write_package(cfg.source("chain").landing, load_id, f"2023-11-14T22:13:{second}Z", records)
    assert commands.main(["--config", str(work / "lakenorm.yaml"), "normalize"]) == 0
    return peer, lambda table: read_table(spark, cfg.table_path("chain", table))


def assert_same_tables(peer: dict, ours, tables: list[str], our_name=lambda name: name) -> None:
    """`our_name`: lakenorm's name of each of dlt's tables (they differ where dlt's needs quoting in a catalog)."""
    assert set(tables) <= set(peer)
    for name in tables:
        df = ours(our_name(name))
        ours_types = data_columns(dict(df.dtypes))
        theirs_types = {c: DLT_SPARK_TYPES[t] for c, t in data_columns(peer[name]["types"]).items()}
        assert ours_types == {**theirs_types, **{c: "bigint" for c in ("_dlt_list_idx",) if c in theirs_types}}, name
        columns = sorted(theirs_types)
        ours_rows = [row.asDict() for row in df.collect()]  # a few test rows
        assert comparable(ours_rows, columns) == comparable(_json_as_text(peer[name]["rows"], peer[name]["types"]),
                                                            columns), name


def _json_as_text(rows: list[dict], types: dict[str, str]) -> list[dict]:
    """dlt's `json` columns as the JSON text lakenorm stores (compact, as dlt serializes them)."""
    json_columns = [c for c, t in types.items() if t == "json"]
    return [{**row, **{c: _compact(row[c]) for c in json_columns if row.get(c) is not None}} for row in rows]


def _compact(value):
    return json.dumps(json.loads(value) if isinstance(value, str) else value, separators=(",", ":"))


@pytest.mark.slow
def test_primary_key_merge_and_column_hints_give_dlts_tables(spark, tmp_path):
    case = json.loads((CASES / "hints.json").read_text())
    peer, ours = run_both(spark, tmp_path, case)

    assert_same_tables(peer, ours, ["accounts", "accounts__tags", "events", "users"])
    assert sorted(r["id"] for r in ours("accounts").collect()) == [1, 2, 3, 4]  # one current row per key
    assert ours("accounts_scd").count() == 5  # every version kept in history


@pytest.mark.slow
def test_direct_naming_gives_dlts_table_and_column_names(spark, tmp_path):
    case = json.loads((CASES / "direct.json").read_text(encoding="utf-8"))
    peer, ours = run_both(spark, tmp_path, case)

    tables = sorted(t for t in peer if not t.startswith("_dlt"))
    assert tables == ["Orders", "Orders▶Line_Items", "Orders▶Tags"]
    assert "Kunde▶Straße" in peer["Orders"]["types"] and "日本" in peer["Orders"]["types"]
    assert_same_tables(peer, ours, tables, our_name=lambda table: table.replace("▶", "__"))  # a catalog's names


@pytest.mark.slow
def test_detections_and_preferred_types_give_dlts_types(spark, tmp_path, monkeypatch):
    case = json.loads((CASES / "settings.json").read_text())
    # dlt's `timestamp` detection compares with its clock, lakenorm's with the record's time: the packages' here
    monkeypatch.setattr("dlt.common.schema.detections._NOW_TS", 1700000000.0)
    peer, ours = run_both(spark, tmp_path, case)

    assert {c: peer["orders"]["types"][c] for c in ("amount_net", "amount_gross", "code", "created_at", "due_on",
                                                    "paid", "views")} == {
        "amount_net": "double", "amount_gross": "double", "code": "text", "created_at": "text", "due_on": "date",
        "paid": "timestamp", "views": "bigint"}
    assert_same_tables(peer, ours, ["orders", "orders__items"])
