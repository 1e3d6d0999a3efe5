"""`schema_contract` (SPEC §5.4) beside real dlt: the same contract refuses the same loads, and a refused
load commits nothing. Cases: tests/cases/dlt_schema/contracts.json."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from normalization_core.configuration.config import parse_config
from normalization_core.errors import ContractViolation
from normalization_core.io.delta import is_delta_table, read_table
from normalization_core.passes.normalize import normalize_load

from tests.normalization_core.dlt_peer import dlt_contract_outcome, write_package

pytest.importorskip("dlt")
CASES = json.loads((Path(__file__).parents[1] / "cases/dlt_schema/contracts.json").read_text())["cases"]
LOAD_IDS = ("1700000000.1", "1700000001.1")


def lakenorm_outcome(spark, work: Path, case: dict) -> tuple[str | None, dict[str, int]]:
    """The entity refusing the second load (None: it loaded), and the rows each table holds after it."""
    (work / "landing").mkdir(parents=True)
    first, second = (parse_config({"warehouse": "wh", "sources": [{
        "name": "chain", "landing": "landing", "convention": "dlt",
        "streams": {"s": {"schema_contract": contract}}}]}, base_dir=work) for contract in ("evolve", case["contract"]))
    landing = first.source("chain").landing
    write_package(landing, LOAD_IDS[0], "2023-11-14T22:13:20Z", {"s": case["first"]})
    write_package(landing, LOAD_IDS[1], "2023-11-14T22:13:21Z", {"s": case["second"]})
    normalize_load(spark, first, "chain", LOAD_IDS[0])
    violated = None
    try:
        normalize_load(spark, second, "chain", LOAD_IDS[1])
    except ContractViolation as err:
        assert err.stream == "s" and "nothing of the load was committed" in str(err)
        violated = err.entity
    rows = {t.name: read_table(spark, str(t)).count() for t in sorted((work / "wh/chain").iterdir())
            if is_delta_table(spark, str(t))}
    return violated, rows


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=lambda c: c["name"])
def test_a_contract_refuses_what_dlts_refuses_and_a_refused_load_commits_nothing(spark, tmp_path, case):
    theirs = dlt_contract_outcome(tmp_path / "dlt", case["first"], case["second"], case["contract"])
    ours, rows = lakenorm_outcome(spark, tmp_path / "lakenorm", case)

    assert ours == theirs == case["violates"]
    if ours is None:
        assert rows["s"] == 2 and rows["_dlt_raw_s"] == 2
    else:  # only the first load anywhere: raw, typed, versions, registry
        assert rows["s"] == 1 and rows["_dlt_raw_s"] == 1 and rows["_dlt_version"] == 1
        assert rows["_dlt_loads"] == 1
