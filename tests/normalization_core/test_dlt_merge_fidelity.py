"""A record's own `_dlt_id` under `append_dedup`, beside real dlt's merge strategies on the same records.

dlt keeps the record's value as the row key under `delete-insert`, `upsert` (its one table of current rows) and
`scd2` (its history), and its child rows point at it. lakenorm's current table holds what dlt's `delete-insert`
and `upsert` hold, its history what dlt's `scd2` holds; the version key stays in `_dlt_unique_key_scd`.
"""
from __future__ import annotations

import io
import json
import re
from contextlib import redirect_stdout
from pathlib import Path

import pytest
import yaml

from lakenorm_app import commands
from normalization_core.configuration.config import load_config
from normalization_core.io.delta import read_table
from tests.normalization_core.dlt_peer import run_dlt_merge, write_package

pytest.importorskip("dlt")
CASE = json.loads((Path(__file__).parents[1] / "cases/dlt_fidelity/own_row_key_merge.json").read_text())
STREAM, STRATEGIES, OWN_KEYS = "items", ("delete-insert", "scd2", "upsert"), {"v1_mine", "v2_mine"}


@pytest.fixture(scope="module")
def dlt_tables(tmp_path_factory) -> dict[str, dict[str, list[dict]]]:
    work = tmp_path_factory.mktemp("dlt_merge")
    return {s: run_dlt_merge(work / s, STREAM, CASE["loads"], s, CASE["primary_key"]) for s in STRATEGIES}


@pytest.fixture(scope="module", params=["dlt", "direct"])
def lakenorm_tables(request, spark, tmp_path_factory) -> dict[str, list[dict]]:
    """The stream's current, history and child tables after the two loads, normalized by the CLI."""
    work = tmp_path_factory.mktemp(f"lakenorm_{request.param}")
    (work / "landing").mkdir()
    stream = {"destination_sync_mode": "append_dedup", "primary_key": CASE["primary_key"]}
    doc = {"warehouse": "wh", "spark": {"master": "local[2]"},
           "sources": [{"name": "chain", "landing": "landing", "convention": request.param,
                        "streams": {STREAM: stream}}]}
    (work / "lakenorm.yaml").write_text(yaml.safe_dump(doc))
    config = load_config(work / "lakenorm.yaml")
    for i, records in enumerate(CASE["loads"]):
        write_package(config.source("chain").landing, f"170000000{i}.1", f"2023-11-14T22:13:2{i}Z", {STREAM: records})
        with redirect_stdout(io.StringIO()):
            assert commands.main(["--config", str(work / "lakenorm.yaml"), "normalize"]) == 0
    names = (STREAM, f"{STREAM}_scd", f"{STREAM}__kids")
    return {name: [r.asDict() for r in read_table(spark, config.table_path("chain", name)).collect()]  # a few rows
            for name in names}


def own_keys(rows: list[dict]) -> list[tuple]:
    """(marker, value, the record's own row key or None) of each row, in order."""
    return sorted((r["marker"], r["v"], r["_dlt_id"] if r["_dlt_id"] in OWN_KEYS else None) for r in rows)


@pytest.mark.slow
def test_the_current_table_keeps_the_records_own_key_as_dlts_delete_insert_and_upsert_do(dlt_tables, lakenorm_tables):
    ours = own_keys(lakenorm_tables[STREAM])
    assert ours == [(1, "c", "v2_mine"), (2, "b", None)]
    for strategy in ("delete-insert", "upsert"):
        assert own_keys(dlt_tables[strategy][STREAM]) == ours


@pytest.mark.slow
def test_the_history_keeps_each_versions_own_key_as_dlts_scd2_does(dlt_tables, lakenorm_tables):
    history = lakenorm_tables[f"{STREAM}_scd"]
    assert own_keys(history) == own_keys(dlt_tables["scd2"][STREAM]) == [
        (1, "a", "v1_mine"), (1, "c", "v2_mine"), (2, "b", None)]
    closed = lambda rows: {r["_dlt_id"] for r in rows if r["_dlt_valid_to"] is not None} & OWN_KEYS  # noqa: E731
    assert closed(history) == closed(dlt_tables["scd2"][STREAM]) == {"v1_mine"}  # (dlt's also retires marker 2)
    versions = [r["_dlt_unique_key_scd"] for r in history]
    assert len(set(versions)) == 3 and all(re.fullmatch("[0-9a-f]{32}", v) for v in versions)


@pytest.mark.slow
def test_child_rows_point_at_the_records_own_key_as_dlts_do(dlt_tables, lakenorm_tables):
    ours = sorted((r["k"], r["_dlt_parent_id"]) for r in lakenorm_tables[f"{STREAM}__kids"])
    assert ours == [(1, "v1_mine"), (2, "v2_mine")]
    for strategy in ("scd2", "upsert"):  # (delete-insert keeps the newest version's children only)
        assert sorted((r["k"], r["_dlt_parent_id"]) for r in dlt_tables[strategy][f"{STREAM}__kids"]) == ours
    assert [(r["k"], r["_dlt_parent_id"]) for r in dlt_tables["delete-insert"][f"{STREAM}__kids"]] == [(2, "v2_mine")]
