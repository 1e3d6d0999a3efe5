"""Inference types every JSON number form as real dlt 1.31 does (SPEC §5.2): `1.0`, `3170.00` and `-0.0`
are doubles (written with a fraction), `-0` an integer, so a later `3170.5` needs no variant column.
Integers beyond 64 bits stay exact as SPEC §5.2 says."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from normalization_core.configuration.config import parse_config
from normalization_core.io.delta import read_table
from normalization_core.passes.normalize import normalize_loads
from tests.normalization_core.dlt_peer import DLT_SPARK_TYPES, data_columns, run_dlt

pytest.importorskip("dlt")
CASE = json.loads((Path(__file__).parents[2] / "cases" / "inference" / "number_forms.json").read_text())


def _package(landing: Path, lines: list[str]) -> None:
    folder = landing / "1700000000.1"
    folder.mkdir(parents=True)
    (folder / "nums.jsonl").write_text("".join(line + "\n" for line in lines))
    (folder / "_manifest.json").write_text(json.dumps({
        "load_id": "1700000000.1", "created_at": "2023-11-14T22:13:20Z", "source": "chain", "format": "records",
        "streams": {"nums": {"files": ["nums.jsonl"]}}}))


def _lakenorm(spark, tmp_path: Path, lines: list[str]):
    _package(tmp_path / "landing", lines)
    config = parse_config({"warehouse": "wh", "sources": [{"name": "chain", "landing": "landing",
                                                           "convention": "dlt"}]}, base_dir=tmp_path)
    normalize_loads(spark, config, "chain", ["1700000000.1"])
    return read_table(spark, config.table_path("chain", "nums"))


def test_number_forms_give_dlts_column_types_and_variant_columns(spark, tmp_path):
    from dlt.common.json import json as dlt_json

    os.environ.setdefault("RUNTIME__DLTHUB_TELEMETRY", "false")
    peer = run_dlt(tmp_path / "dlt", [{"nums": [dlt_json.loads(line) for line in CASE["lines"]]}])
    theirs = {c: DLT_SPARK_TYPES[t] for c, t in data_columns(peer["nums"]["types"]).items()}
    ours = _lakenorm(spark, tmp_path, CASE["lines"])
    assert data_columns(dict(ours.dtypes)) == theirs
    assert (theirs["a"], theirs["f"], theirs["c"]) == ("bigint", "bigint", "double")
    assert not [c for c in theirs if "__v_" in c]  # `3170.5` after `3170.00`: no variant column for either
    rows = {r.id: r for r in ours.collect()}
    assert (rows[1].b, rows[1].c, rows[1].k, rows[2].c, rows[2].k) == (1.0, 3170.0, -0.0, 3170.5, 7.5)


def test_integers_beyond_64_bits_stay_exact(spark, tmp_path):
    beyond = CASE["beyond_dlt"]
    ours = _lakenorm(spark, tmp_path, [beyond["line"]])
    assert {c: t for c, t in ours.dtypes if c in beyond["types"]} == beyond["types"]
    row = ours.first()
    assert {c: str(row[c]) for c in beyond["values"]} == beyond["values"]
