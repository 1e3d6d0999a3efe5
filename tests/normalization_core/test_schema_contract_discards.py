"""`schema_contract` `discard_row` / `discard_value` (SPEC §5.4) beside real dlt: the same records and contract
give the same tables, columns and rows; what is discarded stays in raw and is counted in the registry; a rebuild
from raw discards again what the loads discarded, so it gives the tables the loads gave.
Cases: tests/cases/dlt_schema/discards.json, each case a stream of the same two loads."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from normalization_core.configuration.config import parse_config
from normalization_core.io.delta import is_delta_table, read_table
from normalization_core.passes.normalize import normalize_load
from normalization_core.passes.rebuild import rebuild_stream

from tests.normalization_core.dlt_peer import dlt_contract_tables, write_package
from tests.normalization_core.test_dlt_schema_settings import assert_same_tables

pytest.importorskip("dlt")
DATA = json.loads((Path(__file__).parents[1] / "cases/dlt_schema/discards.json").read_text())
CASES = DATA["cases"]
LOAD_IDS = ("1700000000.1", "1700000001.1")


def named(stream: str, counts: dict[str, int]) -> dict[str, int]:
    """The case's counts by table with `s` replaced by the stream's name."""
    return {stream + table[1:]: n for table, n in counts.items()}


def table_rows(ours, table: str) -> list[str]:
    """The table's rows without the time they were normalized at (a rebuild's is its own)."""
    df = ours(table)
    return sorted(json.dumps(r.asDict(recursive=True), sort_keys=True, default=str)
                  for r in df.drop(*[c for c in df.columns if c.endswith("_normalized_at")]).collect())  # test rows


def assert_a_rebuild_gives_the_tables_the_loads_gave(spark, ours, config, streams: list[str], warehouse: Path):
    """`rebuild_stream` of each stream (the load path over all of raw) leaves every table of the stream (root,
    children, history) as the loads left it, and counts its rows."""
    written = {s: sorted(p.name for p in warehouse.iterdir()
                         if p.name == s or p.name.startswith((f"{s}__", f"{s}_scd"))) for s in streams}
    before = {t: table_rows(ours, t) for s in streams for t in written[s]}
    rebuilt = {s: rebuild_stream(spark, config, "chain", s) for s in streams}
    assert {t: table_rows(ours, t) for s in streams for t in written[s]} == before
    assert {t: n for s in streams for t, n in rebuilt[s].items()} == {t: len(rows) for t, rows in before.items()}


def normalize_both_loads(spark, work: Path, data: dict = DATA, stream_settings: dict | None = None):
    """lakenorm over the two loads of `data`, the second with each case's stream under its contract
    (`stream_settings`: more settings of every stream); returns a table reader, the second load's result and
    the configuration of the second load."""
    (work / "landing").mkdir(parents=True)
    first, second = (parse_config({"warehouse": "wh", "sources": [{
        "name": "chain", "landing": "landing", "convention": "dlt",
        "streams": {c["stream"]: {**(stream_settings or {}), "schema_contract": c["contract"] if later else "evolve"}
                    for c in data["cases"]}}]},
        base_dir=work) for later in (False, True))
    landing = first.source("chain").landing
    for load_id, second_of_minute, records in zip(LOAD_IDS, ("20", "21"), (data["first"], data["second"])):
        write_package(landing, load_id, f"2023-11-14T22:13:{second_of_minute}Z",
                      {c["stream"]: records for c in data["cases"]})
    normalize_load(spark, first, "chain", LOAD_IDS[0])
    result = normalize_load(spark, second, "chain", LOAD_IDS[1])
    return (lambda table: read_table(spark, second.table_path("chain", table))), result, second


@pytest.mark.slow
def test_discarded_rows_and_values_match_dlt_and_are_counted(spark, tmp_path):
    streams = [c["stream"] for c in CASES]
    peer = dlt_contract_tables(tmp_path / "dlt", {s: DATA["first"] for s in streams},
                               {s: DATA["second"] for s in streams}, {c["stream"]: c["contract"] for c in CASES})
    ours, result, config = normalize_both_loads(spark, tmp_path / "lakenorm")

    registry = {row["stream"]: row for row in ours("_dlt_stream_loads").where(f"load_id = '{LOAD_IDS[1]}'").collect()}
    for case in CASES:
        stream, tables = case["stream"], named(case["stream"], case["tables"])
        assert sorted(t for t in peer if t.split("__")[0] == stream) == sorted(tables), case["name"]
        assert_same_tables(peer, ours, sorted(tables))
        assert {t: ours(t).count() for t in tables} == tables, case["name"]
        assert not is_delta_table(spark, str(tmp_path / f"lakenorm/wh/chain/{stream}__tags"))
        assert ours(f"_dlt_raw_{stream}").count() == 1 + len(DATA["second"])  # raw keeps every line
        rows, values = named(stream, case["discarded"]["rows"]), named(stream, case["discarded"]["values"])
        discarded = result.streams[stream].discarded
        assert {t: d.rows for t, d in discarded.items() if d.rows} == rows, case["name"]
        assert {t: d.values for t, d in discarded.items() if d.values} == values, case["name"]
        assert (registry[stream]["discarded_rows"], registry[stream]["discarded_values"]) == (rows, values)
    assert_a_rebuild_gives_the_tables_the_loads_gave(spark, ours, config, streams, tmp_path / "lakenorm/wh/chain")
