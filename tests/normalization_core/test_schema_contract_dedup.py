"""`schema_contract` `discard_row` / `discard_value` on `append_dedup` streams (SPEC §5.4, §6) beside real dlt's
`merge` (primary key, delta table format): the same records and contract give the same current tables, columns
and rows; a discarded row never becomes a version (nor do its children); what is discarded stays in raw and is
counted in the registry; normalizing a load again changes nothing, and a rebuild from raw discards again what the
loads discarded (the same history, current and child tables). Cases: tests/cases/dlt_schema/dedup_discards.json."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from normalization_core.columns import DLT
from normalization_core.io.delta import is_delta_table
from normalization_core.passes.normalize import normalize_load

from tests.normalization_core.dlt_peer import dlt_contract_tables
from tests.normalization_core.test_dlt_schema_settings import assert_same_tables, lakenorm_stream_settings
from tests.normalization_core.test_schema_contract_discards import (
    LOAD_IDS,
    assert_a_rebuild_gives_the_tables_the_loads_gave,
    named,
    normalize_both_loads,
)

pytest.importorskip("dlt")
DATA = json.loads((Path(__file__).parents[1] / "cases/dlt_schema/dedup_discards.json").read_text())
CASES = DATA["cases"]


def current_tables(ours, stream: str):
    """A reader of the stream's current tables: the current root, and the child rows of its current versions
    (lakenorm's child tables keep the children of every version; dlt's merge keeps the current ones)."""
    def read(table: str):
        if table == stream:
            return ours(table)
        current = ours(stream).select(F.col(DLT.row_id(stream)).alias(DLT.root_id))
        return ours(table).join(current, DLT.root_id, "left_semi")
    return read


def history(ours, stream: str) -> list[tuple]:
    rows = ours(f"{stream}_scd").collect()  # a few test rows
    return sorted(((r["id"], r["a"], r["n"], r[DLT.is_current]) for r in rows), key=repr)


def registry_counts(ours, load_id: str) -> dict[str, tuple[dict, dict]]:
    rows = ours("_dlt_stream_loads").where(F.col("load_id") == load_id).collect()
    return {r["stream"]: (r["discarded_rows"], r["discarded_values"]) for r in rows}


@pytest.mark.slow
def test_discards_on_dedup_streams_match_dlts_merge_and_are_counted(spark, tmp_path):
    streams = [c["stream"] for c in CASES]
    peer = dlt_contract_tables(tmp_path / "dlt", {s: DATA["first"] for s in streams},
                               {s: DATA["second"] for s in streams}, {c["stream"]: c["contract"] for c in CASES},
                               hints={s: copy.deepcopy(DATA["dlt"]) for s in streams})
    ours, result, config = normalize_both_loads(spark, tmp_path / "lakenorm", DATA,
                                                lakenorm_stream_settings(DATA["dlt"]))

    for case in CASES:
        stream, tables = case["stream"], named(case["stream"], case["current"])
        assert sorted(t for t in peer if t.split("__")[0] == stream) == sorted(tables), case["name"]
        current = current_tables(ours, stream)
        assert_same_tables(peer, current, sorted(tables))
        assert {t: current(t).count() for t in tables} == tables, case["name"]
        assert history(ours, stream) == sorted(map(tuple, case["history"]), key=repr), case["name"]
        assert sorted(r["q"] for r in ours(f"{stream}__items").collect()) == case["items"], case["name"]
        assert not is_delta_table(spark, str(tmp_path / f"lakenorm/wh/chain/{stream}__tags"))
        assert ours(f"_dlt_raw_{stream}").count() == len(DATA["first"]) + len(DATA["second"])  # raw keeps every line
        rows, values = named(stream, case["discarded"]["rows"]), named(stream, case["discarded"]["values"])
        discarded = result.streams[stream].discarded
        assert {t: d.rows for t, d in discarded.items() if d.rows} == rows, case["name"]
        assert {t: d.values for t, d in discarded.items() if d.values} == values, case["name"]
        assert registry_counts(ours, LOAD_IDS[1])[stream] == (rows, values), case["name"]

    before = {s: (history(ours, s), sorted(r["q"] for r in ours(f"{s}__items").collect())) for s in streams}
    again = normalize_load(spark, config, "chain", LOAD_IDS[1])  # normalizing a load again changes nothing
    assert {s: (history(ours, s), sorted(r["q"] for r in ours(f"{s}__items").collect())) for s in streams} == before
    assert {s: again.streams[s].discarded for s in streams} == {s: result.streams[s].discarded for s in streams}
    assert_a_rebuild_gives_the_tables_the_loads_gave(spark, ours, config, streams, tmp_path / "lakenorm/wh/chain")
