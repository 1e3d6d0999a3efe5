"""Real dlt and lakenorm's `dlt` convention on the same records (issue 23): tables, columns, types, values.

Keys whose kind varies (string/array, object/scalar, array/object, in both record orders), a key collision,
and two loads with the system tables `_dlt_loads` / `_dlt_version`.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from normalization_core.config import load_config
from normalization_core.io.delta import read_table
from normalization_core.pipeline import normalize_load

from tests.normalization_core.dlt_peer import DLT_SPARK_TYPES, run_dlt

pytest.importorskip("dlt")
CASES = json.loads((Path(__file__).parents[1] / "cases/dlt_fidelity/records.json").read_text())["streams"]
LINKS = ("_dlt_list_idx",)
"""dlt system columns compared by value (the row keys differ by design: dlt's are random)."""


def streams() -> dict[str, list[dict]]:
    both = {}
    for name, records in CASES.items():
        both[name], both[f"{name}_reversed"] = records, records[::-1]
    return both


def write_package(landing: Path, load_id: str, created_at: str, records: dict[str, list[dict]]) -> None:
    folder = landing / load_id
    folder.mkdir(parents=True)
    for stream, rows in records.items():
        (folder / f"{stream}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "_manifest.json").write_text(json.dumps({
        "load_id": load_id, "created_at": created_at, "source": "chain", "format": "records",
        "streams": {s: {"files": [f"{s}.jsonl"]} for s in records}}))


@pytest.fixture(scope="module")
def both(spark, tmp_path_factory):
    """dlt's tables and lakenorm's, for two loads of the same records."""
    work = tmp_path_factory.mktemp("dlt_fidelity")
    second = {"string_array": [{"id": 9, "k": ["c"]}]}
    peer = run_dlt(work / "dlt", [streams(), second])
    (work / "landing").mkdir()
    doc = {"warehouse": "wh", "sources": [{"name": "chain", "landing": "landing", "convention": "dlt"}],
           "spark": {"master": "local[2]", "spark.sql.shuffle.partitions": "2"}}
    (work / "lakenorm.yaml").write_text(yaml.safe_dump(doc))
    cfg = load_config(work / "lakenorm.yaml")
    write_package(cfg.source("chain").landing, "1700000000.1", "2023-11-14T22:13:20Z", streams())
    write_package(cfg.source("chain").landing, "1700000001.1", "2023-11-14T22:13:21Z", second)
    normalize_load(spark, cfg, "chain", "1700000000.1")
    normalize_load(spark, cfg, "chain", "1700000001.1")
    return peer, lambda name: read_table(spark, cfg.table_path("chain", name))


def data_columns(types: dict[str, str]) -> dict[str, str]:
    return {c: t for c, t in types.items() if not c.startswith("_dlt_") or c in LINKS}


def comparable(rows: list[dict], columns: list[str]) -> list[tuple]:
    return sorted((tuple(row.get(c) for c in columns) for row in rows), key=repr)


def lakenorm_tables(peer: dict) -> list[str]:
    return sorted(t for t in peer if not t.startswith(("_dlt", "collision")))


@pytest.mark.slow
def test_keys_of_varying_kind_give_dlts_tables_columns_types_and_values(both):
    peer, table = both
    for name in lakenorm_tables(peer):
        ours = table(name)
        ours_types = data_columns(dict(ours.dtypes))
        theirs_types = {c: DLT_SPARK_TYPES[t] for c, t in data_columns(peer[name]["types"]).items()}
        assert ours_types == {**theirs_types, **{c: "bigint" for c in LINKS if c in theirs_types}}, name
        columns = sorted(theirs_types)
        ours_rows = [row.asDict() for row in ours.collect()]  # a few test rows
        assert comparable(ours_rows, columns) == comparable(peer[name]["rows"], columns), name


@pytest.mark.slow
def test_the_tables_do_not_depend_on_record_order(both):
    peer, table = both
    for name in CASES:
        for suffix in ("", "__k"):
            if f"{name}{suffix}" in peer:
                forward, backward = table(f"{name}{suffix}"), table(f"{name}_reversed{suffix}")
                assert sorted(data_columns(dict(forward.dtypes)).items()) == sorted(
                    data_columns(dict(backward.dtypes)).items())


@pytest.mark.slow
def test_a_key_written_as_the_normalized_name_keeps_it_in_a_collision(both):
    peer, table = both
    for name in ("collision", "collision_reversed"):
        theirs = {r["id"]: r["block_hash"] for r in peer[name]["rows"]}  # dlt: the later key's value
        ours = {r["id"]: r for r in table(name).collect()}  # a few test rows
        assert {i: r["block_hash"] for i, r in ours.items()} == theirs == {1: "0xb", 2: "0xc"}
        (renamed,) = [c for c in table(name).columns if c.startswith("block_hash_")]
        assert ours[1][renamed] == "0xa" and ours[2][renamed] is None
