"""A load whose schema contract discarded rows (SPEC §5.4) passes `rows_typed_per_load`: the check counts the
discarded rows (raw keeps them) instead of reporting them as lost."""
from __future__ import annotations

import json
from pathlib import Path

import dagster as dg

from normalization_core.configuration.config import parse_config
from normalization_core.passes.normalize import normalize_load
from pipeline_assets.factories import build_source_assets
from pipeline_assets.resources import SparkSessionResource
from tests.normalization_core.dlt_peer import write_package

DATA = json.loads((Path(__file__).parents[1] / "cases/dlt_schema/discards.json").read_text())
LOAD_IDS = ("1700000000.1", "1700000001.1")


def chain(tmp_path: Path, contracts: bool):
    streams = {c["stream"]: {"schema_contract": c["contract"] if contracts else "evolve"} for c in DATA["cases"]}
    return parse_config({"warehouse": "wh", "sources": [
        {"name": "chain", "landing": "landing", "convention": "dlt", "streams": streams}]}, base_dir=tmp_path)


def test_rows_typed_per_load_passes_when_the_contract_discarded_rows(spark, tmp_path):
    (tmp_path / "landing").mkdir()
    for load_id, second, records in zip(LOAD_IDS, ("20", "21"), (DATA["first"], DATA["second"])):
        write_package(tmp_path / "landing", load_id, f"2023-11-14T22:13:{second}Z",
                      {c["stream"]: records for c in DATA["cases"]})
    normalize_load(spark, chain(tmp_path, contracts=False), "chain", LOAD_IDS[0])
    config = chain(tmp_path, contracts=True)
    assets = build_source_assets(config, config.source("chain"), [c["stream"] for c in DATA["cases"]])
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("chain_load_ids", list(LOAD_IDS))
        result = dg.materialize([assets], instance=instance, partition_key=LOAD_IDS[1],
                                resources={"spark": SparkSessionResource(spark_conf=config.spark)})
    assert result.success
    checks = {(e.asset_key.path[-1], e.check_name): e for e in result.get_asset_check_evaluations()}
    for case in DATA["cases"]:
        check = checks[(case["stream"], "rows_typed_per_load")]
        discarded = case["discarded"]["rows"]["s"]
        assert check.passed, (case["name"], check.metadata)
        assert check.metadata["discarded_rows"].value == discarded == 1
        assert check.metadata["valid_raw_lines"].value == len(DATA["second"])
        assert check.metadata["typed_rows"].value == len(DATA["second"]) - discarded
