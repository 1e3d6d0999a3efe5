"""`schema_contract` `discard_row` / `discard_value` (SPEC §5.4) beside real dlt: the same records and contract
give the same tables, columns and rows; what is discarded stays in raw and is counted in the registry.
Cases: tests/cases/dlt_schema/discards.json."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from normalization_core.config import parse_config
from normalization_core.io.delta import is_delta_table, read_table
from normalization_core.pipeline import normalize_load

from tests.normalization_core.dlt_peer import dlt_contract_tables, write_package
from tests.normalization_core.test_dlt_schema_settings import assert_same_tables

pytest.importorskip("dlt")
DATA = json.loads((Path(__file__).parents[1] / "cases/dlt_schema/discards.json").read_text())
LOAD_IDS = ("1700000000.1", "1700000001.1")


def normalize_both_loads(spark, work: Path, contract: dict):
    """lakenorm over the two loads, the second under `contract`: (table reader, second load's result)."""
    (work / "landing").mkdir(parents=True)
    first, second = (parse_config({"warehouse": "wh", "sources": [{
        "name": "chain", "landing": "landing", "convention": "dlt",
        "streams": {"s": {"schema_contract": mode}}}]}, base_dir=work) for mode in ("evolve", contract))
    landing = first.source("chain").landing
    write_package(landing, LOAD_IDS[0], "2023-11-14T22:13:20Z", {"s": DATA["first"]})
    write_package(landing, LOAD_IDS[1], "2023-11-14T22:13:21Z", {"s": DATA["second"]})
    normalize_load(spark, first, "chain", LOAD_IDS[0])
    result = normalize_load(spark, second, "chain", LOAD_IDS[1])
    return (lambda table: read_table(spark, second.table_path("chain", table))), result


@pytest.mark.slow
@pytest.mark.parametrize("case", DATA["cases"], ids=lambda c: c["name"])
def test_discarded_rows_and_values_match_dlt_and_are_counted(spark, tmp_path, case):
    peer = dlt_contract_tables(tmp_path / "dlt", DATA["first"], DATA["second"], case["contract"])
    ours, result = normalize_both_loads(spark, tmp_path / "lakenorm", case["contract"])

    assert sorted(t for t in peer if not t.startswith("_dlt")) == sorted(case["tables"])
    assert_same_tables(peer, ours, sorted(case["tables"]))
    assert {t: ours(t).count() for t in case["tables"]} == case["tables"]
    assert not is_delta_table(spark, str(tmp_path / "lakenorm/wh/chain/s__tags"))
    assert ours("_dlt_raw_s").count() == 1 + len(DATA["second"])  # raw keeps every line
    discarded = result.streams["s"].discarded
    assert {t: d.rows for t, d in discarded.items() if d.rows} == case["discarded"]["rows"]
    assert {t: d.values for t, d in discarded.items() if d.values} == case["discarded"]["values"]
    registry = ours("_dlt_stream_loads").where(f"load_id = '{LOAD_IDS[1]}'").first()
    assert (registry["discarded_rows"], registry["discarded_values"]) == (
        case["discarded"]["rows"], case["discarded"]["values"])
