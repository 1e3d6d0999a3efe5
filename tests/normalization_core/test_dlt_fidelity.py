"""Real dlt and lakenorm's `dlt` convention on the same records: tables, columns, types, values.

Keys whose kind varies (string/array, object/scalar, array/object, in both record orders), a key collision,
and two loads with the system tables `_dlt_loads` / `_dlt_version`.
"""
from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from datetime import datetime, timezone
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from pyspark.sql import DataFrame, SparkSession

from lakenorm_app import commands
from normalization_core.configuration.config import LakenormConfig, load_config
from normalization_core.io.delta import read_table
from normalization_core.io.registry import is_newest_load, normalized_load_ids
from normalization_core.passes.pending import pending_packages
from normalization_core.plans.source_tables import SourceTables

from tests.normalization_core.dlt_peer import (
    DLT_SPARK_TYPES,
    data_columns,
    run_dlt,
    table_differences,
    write_package,
)

pytest.importorskip("dlt")
CASES = json.loads((Path(__file__).parents[1] / "cases/dlt_fidelity/records.json").read_text())["streams"]
SECOND_LOAD = {f"{stream}{suffix}": records for stream, records in (
    ("string_array", [{"id": 9, "k": ["c"]}]), ("object_scalar", [{"id": 9, "k": {"w": 1.5}}])) for suffix in ("", "_reversed")}
LOAD_IDS = ("1700000000.1", "1700000001.1")


def streams() -> dict[str, list[dict]]:
    both = {}
    for name, records in CASES.items():
        both[name], both[f"{name}_reversed"] = records, records[::-1]
    return both


@dataclass
class Both:
    peer: dict
    """dlt's tables (`dlt_peer.run_dlt`)."""
    config: LakenormConfig
    printed: str
    """What `lakenorm normalize` printed for the two loads."""
    spark: SparkSession

    def table(self, name: str) -> DataFrame:
        return read_table(self.spark, self.config.table_path("chain", name))


@pytest.fixture(scope="module")
def both(spark, tmp_path_factory) -> Both:
    """dlt's tables and lakenorm's (normalized by the CLI, one load after the other), for two loads."""
    work = tmp_path_factory.mktemp("dlt_fidelity")
    peer = run_dlt(work / "dlt", [streams(), SECOND_LOAD])
    (work / "landing").mkdir()
    doc = {"warehouse": "wh", "sources": [{"name": "chain", "landing": "landing", "convention": "dlt"}],
           "spark": {"master": "local[2]", "spark.sql.shuffle.partitions": "2"}}
    (work / "lakenorm.yaml").write_text(yaml.safe_dump(doc))
    cfg = load_config(work / "lakenorm.yaml")
    write_package(cfg.source("chain").landing, LOAD_IDS[0], "2023-11-14T22:13:20Z", streams())
    write_package(cfg.source("chain").landing, LOAD_IDS[1], "2023-11-14T22:13:21Z", SECOND_LOAD)
    printed = io.StringIO()
    with redirect_stdout(printed):
        assert commands.main(["--config", str(work / "lakenorm.yaml"), "normalize", "--load-id", LOAD_IDS[0]]) == 0
        assert commands.main(["--config", str(work / "lakenorm.yaml"), "normalize"]) == 0  # the pending second load
    return Both(peer, cfg, printed.getvalue(), spark)


def lakenorm_tables(peer: dict) -> list[str]:
    return sorted(t for t in peer if not t.startswith(("_dlt", "collision")))


@pytest.mark.slow
def test_keys_of_varying_kind_give_dlts_tables_columns_types_and_values(both):
    assert table_differences(both.peer, lakenorm_tables(both.peer), both.table) == {}


@pytest.mark.slow
def test_the_tables_do_not_depend_on_record_order(both):
    peer, table = both.peer, both.table
    for name in CASES:
        for suffix in ("", "__k"):
            if f"{name}{suffix}" in peer:
                forward, backward = table(f"{name}{suffix}"), table(f"{name}_reversed{suffix}")
                assert sorted(data_columns(dict(forward.dtypes)).items()) == sorted(
                    data_columns(dict(backward.dtypes)).items())


@pytest.mark.slow
def test_a_key_written_as_the_normalized_name_keeps_it_in_a_collision(both):
    peer, table = both.peer, both.table
    for name in ("collision", "collision_reversed"):
        theirs = {r["id"]: r["block_hash"] for r in peer[name]["rows"]}  # dlt: the later key's value
        ours = {r["id"]: r for r in table(name).collect()}  # a few test rows
        assert {i: r["block_hash"] for i, r in ours.items()} == theirs == {1: "0xb", 2: "0xc"}
        (renamed,) = [c for c in table(name).columns if c.startswith("block_hash_")]
        assert ours[1][renamed] == "0xa" and ours[2][renamed] is None


@pytest.mark.slow
def test_a_records_own_dlt_id_is_its_row_key_and_other_system_named_keys_are_kept_renamed(both):
    for name in ("own_row_key", "own_row_key_reversed"):
        theirs = {r["id"]: r for r in both.peer[name]["rows"]}
        ours = {r["id"]: r for r in both.table(name).collect()}  # three test rows
        assert ours[1]["_dlt_id"] == theirs[1]["_dlt_id"] == "mine"  # a string of the record's own: the key
        assert all(len(rows[3]["_dlt_id"]) > 1 for rows in (ours, theirs))  # an empty one: a derived key
        kids = {(side, r["a"]): r["_dlt_parent_id"] for side, table in (("ours", both.table(f"{name}__kids").collect()),
                                                                        ("theirs", both.peer[f"{name}__kids"]["rows"]))
                for r in table}
        assert kids[("ours", 1)] == kids[("theirs", 1)] == "mine"
        assert kids[("ours", 2)] == ours[2]["_dlt_id"]
        (renamed,) = [c for c in both.table(name).columns if c.startswith("_dlt_load_id_")]  # dlt overwrites it
        assert ours[1][renamed] == "not a load" != theirs[1]["_dlt_load_id"]


def column_types(types: dict[str, str]) -> dict[str, str]:
    return {c: DLT_SPARK_TYPES[t] for c, t in types.items()}


@pytest.mark.slow
def test_dlt_loads_has_dlts_columns_and_one_row_per_load_with_status_0(both):
    theirs, ours = both.peer["_dlt_loads"], both.table("_dlt_loads")
    assert dict(ours.dtypes) == column_types(theirs["types"])
    assert sorted(r["status"] for r in theirs["rows"]) == [0, 0]
    rows = ours.where("status = 0").collect()  # two loads: metadata
    assert sorted(r["load_id"] for r in rows) == list(LOAD_IDS)
    assert {r["schema_name"] for r in rows} == {"chain"} and all(r["inserted_at"] for r in rows)
    assert all(len(r["schema_version_hash"]) == len(theirs["rows"][0]["schema_version_hash"]) for r in rows)


@pytest.mark.slow
def test_dlt_version_has_dlts_columns_and_values(both):
    theirs, ours = both.peer["_dlt_version"], both.table("_dlt_version")
    dtypes = dict(ours.dtypes)
    assert {c: dtypes.get(c) for c in theirs["types"]} == column_types(theirs["types"])
    rows = ours.collect()  # a few schema versions: metadata
    assert {r["engine_version"] for r in rows} == {r["engine_version"] for r in theirs["rows"]} == {11}
    assert {r["schema_name"] for r in rows} == set(streams())
    assert all(json.loads(r["schema"])["stream"] == r["schema_name"] for r in rows)
    evolved = sorted(r["version"] for r in rows if r["schema_name"] == "object_scalar")
    assert evolved == [1, 2]  # the second load adds `k__w`


@pytest.mark.slow
def test_registry_readers_work_beside_dlts_loads_table(both):
    source = both.config.source("chain")
    assert pending_packages(both.spark, both.config, source).packages == ()
    registry = SourceTables(both.config, source).registry_path
    assert registry.endswith("_dlt_stream_loads")
    assert normalized_load_ids(both.spark, registry) == set(LOAD_IDS)
    first = datetime(2023, 11, 14, 22, 13, 20, tzinfo=timezone.utc)
    assert not is_newest_load(both.spark, registry, "string_array", (first, LOAD_IDS[0]))
    assert is_newest_load(both.spark, registry, "string_array", (first.replace(second=21), LOAD_IDS[1]))


@pytest.mark.slow
def test_normalize_prints_every_raw_typed_and_child_table(both):
    printed = {(line.split()[1], line.split()[2]) for line in both.printed.splitlines()}
    assert {(LOAD_IDS[0], "_dlt_raw_string_array"), (LOAD_IDS[0], "string_array"),
            (LOAD_IDS[0], "string_array__k"), (LOAD_IDS[1], "string_array__k"),
            (LOAD_IDS[1], "object_scalar")} <= printed
