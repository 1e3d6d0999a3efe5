"""Streams without a catalog (SPEC §5.2, §5.3): inferred per load, evolved, versioned, shown by `lakenorm schema`."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from lakenorm_app import commands
from normalization_core.configuration.config import load_config
from normalization_core.io.delta import read_table
from normalization_core.passes.normalize import normalize_load
from normalization_core.plans.source_tables import SourceTables
from normalization_core.plans.stream_plans import stream_plans
from pipeline_assets.factories import build_source_assets
from tests.code_location import loaded_without_a_jvm

FIRST = [{"id": 1, "name": "a", "at": "2024-01-02T03:04:05Z", "items": [{"sku": "x", "qty": 2}], "tags": ["t1"]},
         {"id": "abc", "name": "b", "items": [], "extra": None}]
SECOND = [{"id": 3, "name": "c", "qty_total": 1.5, "items": [{"sku": "y", "qty": "many"}]}]


def write_package(landing: Path, load_id: str, created_at: str, records: list[dict]) -> None:
    folder = landing / load_id
    (folder / "things").mkdir(parents=True)
    (folder / "things/part-0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (folder / "_manifest.json").write_text(json.dumps({
        "load_id": load_id, "created_at": created_at, "source": "shop", "format": "records",
        "streams": {"things": {"files": ["things/part-0.jsonl"]}}}))


def config_file(tmp_path: Path) -> Path:
    (tmp_path / "landing").mkdir()
    doc = {"warehouse": "wh", "sources": [{"name": "shop", "landing": "landing"}],
           "spark": {"master": "local[2]", "spark.sql.shuffle.partitions": "2"}}
    (tmp_path / "lakenorm.yaml").write_text(yaml.safe_dump(doc))
    return tmp_path / "lakenorm.yaml"


@pytest.mark.slow
def test_an_inferred_stream_is_typed_evolved_and_versioned_per_load(spark, tmp_path, capsys):
    path = config_file(tmp_path)
    cfg = load_config(path)
    landing = cfg.source("shop").landing
    write_package(landing, "L1", "2024-06-01T00:00:00Z", FIRST)
    write_package(landing, "L2", "2024-06-02T00:00:00Z", SECOND)
    table = lambda name: read_table(spark, cfg.table_path("shop", name))  # noqa: E731

    first = normalize_load(spark, cfg, "shop", "L1")
    normalize_load(spark, cfg, "shop", "L1")  # a re-run: same rows, no new version
    root = table("things")
    assert {c: t for c, t in root.dtypes if not c.startswith("_")} == {
        "at": "timestamp", "id": "bigint", "id__v_text": "string", "name": "string"}
    assert sorted((r["name"], r["id"], r["id__v_text"]) for r in root.collect()) == [
        ("a", 1, None), ("b", None, "abc")]
    assert [(r["sku"], r["qty"]) for r in table("things__items").collect()] == [("x", 2)]
    assert [r["value"] for r in table("things__tags").collect()] == ["t1"]
    versions = table("_norm_versions").collect()
    assert [(v["stream"], v["version"]) for v in versions] == [("things", 1)]
    assert yaml.safe_load(versions[0]["schema"])["tables"][0]["name"] == "things"
    loads = {r["load_id"]: r for r in table("_norm_loads").collect()}
    assert loads["L1"]["schema_version_hash"] == versions[0]["version_hash"]
    assert first.streams["things"].schema_version_hash == versions[0]["version_hash"]

    normalize_load(spark, cfg, "shop", "L2")
    normalize_load(spark, cfg, "shop", "L2")
    root = table("things")
    assert dict(root.dtypes)["qty_total"] == "double" and dict(root.dtypes)["id"] == "bigint"
    assert sorted((r["id"], r["qty_total"]) for r in root.collect() if r["id"] is not None) == [(1, None), (3, 1.5)]
    items = sorted((r["sku"], r["qty"], r["qty__v_text"]) for r in table("things__items").collect())
    assert items == [("x", 2, None), ("y", None, "many")]
    versions = sorted((v["version"], v["version_hash"]) for v in table("_norm_versions").collect())
    assert [v for v, _ in versions] == [1, 2]
    loads = {r["load_id"]: r for r in table("_norm_loads").collect()}
    assert loads["L2"]["schema_version_hash"] == versions[1][1]
    assert loads["L1"]["schema_version_hash"] == versions[0][1]

    code = commands.main(["--config", str(path), "schema", "--stream", "things"])
    out = capsys.readouterr().out
    assert code == 0
    (doc,) = list(yaml.safe_load_all(out))
    assert (doc["source"], doc["stream"], doc["version"], doc["version_hash"]) == ("shop", "things", 2, versions[1][1])
    assert [t["name"] for t in doc["schema"]["tables"]] == ["things", "things__items", "things__tags"]
    assert ("qty__v_text", "string") in [(c["name"], c["data_type"]) for c in doc["schema"]["tables"][1]["columns"]]

    plans = stream_plans(cfg.source("shop"), stored_in=SourceTables.of(cfg, "shop"))
    assert plans["things"].tables == ["things", "things__items", "things__tags"]
    keys = {tuple(k.path) for k in build_source_assets(cfg, cfg.source("shop"), ["things"]).keys}
    assert {("shop", "things"), ("shop", "things__items"), ("shop", "things__tags")} <= keys
    assert loaded_without_a_jvm(path) >= {"shop/things", "shop/things__items", "shop/things__tags"}
