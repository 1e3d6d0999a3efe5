"""`schema_contract` `discard_row` / `discard_value` (SPEC §5.4) under the `airbyte` convention: the loads of
tests/cases/dlt_schema/discards.json give tables and columns named the Airbyte way, with the same rows and
values left out as under `dlt` (raw keeps them) and the same counts in the registry (`_airbyte_loads`)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from normalization_core.columns import AIRBYTE, LOADS_DISCARDED_ROWS, LOADS_DISCARDED_VALUES
from normalization_core.configuration.config import parse_config
from normalization_core.io.delta import is_delta_table, read_table
from normalization_core.passes.normalize import normalize_load

from tests.normalization_core.dlt_peer import write_package

DATA = json.loads((Path(__file__).parents[1] / "cases/dlt_schema/discards.json").read_text())
LOAD_IDS = ("1700000000.1", "1700000001.1")
KEPT = {
    "rows_values_rows": {"root": [(None, "w"), (1, "x"), (3, "z"), (5, "v")], "items": [1, 5, 6]},
    "values_rows_values": {"root": [(1, "x"), (2, "y"), (3, "z"), (5, "v")], "items": [1, 2, 3, 4, 5]},
}
"""Per case: (id, a) of the root table and q of its `items` child table after both loads."""


def airbyte_named(stream: str, counts: dict[str, int]) -> dict[str, int]:
    """The case's counts (by dlt's table names, `s` standing for the stream) by Airbyte's table names."""
    return {stream + table[1:].replace("__", "_"): n for table, n in counts.items()}


def normalize_under_airbyte(spark, tmp_path):
    """The two loads normalized under `airbyte`, each case's stream under its contract in the second."""
    (tmp_path / "landing").mkdir()
    first, second = (parse_config({"warehouse": "wh", "sources": [{
        "name": "chain", "landing": "landing", "convention": "airbyte",
        "streams": {c["stream"]: {"schema_contract": c["contract"] if later else "evolve"} for c in DATA["cases"]}}]},
        base_dir=tmp_path) for later in (False, True))
    for load_id, second_of_minute, records in zip(LOAD_IDS, ("20", "21"), (DATA["first"], DATA["second"])):
        write_package(first.source("chain").landing, load_id, f"2023-11-14T22:13:{second_of_minute}Z",
                      {c["stream"]: records for c in DATA["cases"]})
    normalize_load(spark, first, "chain", LOAD_IDS[0])
    result = normalize_load(spark, second, "chain", LOAD_IDS[1])
    return (lambda table: read_table(spark, second.table_path("chain", table))), result


@pytest.mark.slow
def test_discards_under_airbyte_leave_out_the_same_rows_and_values_in_airbyte_named_tables(spark, tmp_path):
    ours, result = normalize_under_airbyte(spark, tmp_path)
    for case in DATA["cases"]:
        assert_case(spark, tmp_path, ours, result, case)


def assert_case(spark, tmp_path, ours, result, case: dict) -> None:
    stream = case["stream"]
    root, items = stream, f"{stream}_items"

    data = {t: sorted((c, kind) for c, kind in ours(t).dtypes if not c.startswith("_airbyte_")) for t in (root, items)}
    assert data == {root: [("a", "string"), ("id", "bigint")], items: [("q", "bigint")]}  # no b, id_v_text, r
    assert {AIRBYTE.raw_id, f"_airbyte_{stream}_hashid"} <= set(ours(root).columns)
    assert {"_airbyte_items_hashid", f"_airbyte_{stream}_foreign_hashid"} <= set(ours(items).columns)
    assert not is_delta_table(spark, str(tmp_path / f"wh/chain/{stream}_tags"))
    assert sorted(((r["id"], r["a"]) for r in ours(root).collect()), key=repr) == sorted(KEPT[case["name"]]["root"],
                                                                                         key=repr), case["name"]
    assert sorted(r["q"] for r in ours(items).collect()) == KEPT[case["name"]]["items"], case["name"]
    assert ours(f"_airbyte_raw_{stream}").count() == len(DATA["first"]) + len(DATA["second"])  # raw keeps every line

    rows = airbyte_named(stream, case["discarded"]["rows"])
    values = airbyte_named(stream, case["discarded"]["values"])
    discarded = result.streams[stream].discarded
    assert ({t: d.rows for t, d in discarded.items() if d.rows}, {t: d.values for t, d in discarded.items() if d.values}
            ) == (rows, values)
    (registry,) = ours(AIRBYTE.loads_table).where((F.col("stream") == stream) & (F.col("load_id") == LOAD_IDS[1])
                                                  ).collect()
    assert (registry[LOADS_DISCARDED_ROWS], registry[LOADS_DISCARDED_VALUES]) == (rows, values)
