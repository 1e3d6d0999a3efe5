"""Tables by name (`register:`) and every load readable as one snapshot (SPEC §11)."""
from __future__ import annotations

import json
import threading
import uuid
from pathlib import Path

import pytest
import yaml

from lakenorm_app import commands
from normalization_core.api import load_config, normalize_loads, read_snapshot, snapshot_versions, source_snapshot
from normalization_core.configuration.config import parse_config
from normalization_core.errors import ConfigError, LakenormError
from normalization_core.io.delta import read_table
from normalization_core.io.table_versions import committed_versions, tagged_commits
from normalization_core.passes.snapshots import read_at
from normalization_core.plans.source_tables import SourceTables

PARENT, CHILD = "orders", "orders__items"


def write_package(landing: Path, load_id: str, orders: int = 3) -> None:
    folder = landing / load_id
    (folder / "orders").mkdir(parents=True)
    records = [{"id": f"{load_id}-{i}", "total": i, "items": [{"sku": f"s{i}", "qty": 1}, {"sku": "x", "qty": 2}]}
               for i in range(orders)]
    (folder / "orders/part-0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (folder / "_manifest.json").write_text(json.dumps({
        "load_id": load_id, "created_at": f"2024-06-01T00:00:{load_id[-1]}0Z", "source": "shop",
        "format": "records", "streams": {"orders": {"files": ["orders/part-0.jsonl"]}}}))


def config_file(tmp_path: Path, register: dict | None = None) -> Path:
    (tmp_path / "landing").mkdir()
    source = {"name": "shop", "landing": "landing", **({"register": register} if register else {})}
    doc = {"warehouse": "wh", "sources": [source], "spark": {"master": "local[2]"}}
    (tmp_path / "lakenorm.yaml").write_text(yaml.safe_dump(doc))
    return tmp_path / "lakenorm.yaml"


def parse(tmp_path: Path, source_extra: dict, spark: dict | None = None):
    (tmp_path / "landing").mkdir(exist_ok=True)
    doc = {"warehouse": "wh", "sources": [{"name": "shop", "landing": "landing", **source_extra}],
           **({"spark": spark} if spark else {})}
    return parse_config(doc, base_dir=tmp_path)


def test_register_is_validated_and_brings_the_embedded_metastore_beside_a_local_warehouse(tmp_path):
    config = parse(tmp_path, {"register": {"schema": "shop", "snapshot_views": True}})
    registration = config.source("shop").register
    assert (registration.schema, registration.snapshot_views, registration.snapshot_schema) == \
        ("shop", True, "shop_snapshot")
    metastore = tmp_path / "metastore"
    assert config.spark["spark.sql.catalogImplementation"] == "hive"
    assert config.spark["spark.hadoop.javax.jdo.option.ConnectionURL"] == \
        f"jdbc:derby:;databaseName={metastore / 'metastore_db'};create=true"
    assert f"-Dderby.system.home={metastore}" in config.spark["spark.driver.extraJavaOptions"]
    assert parse(tmp_path, {}).source("shop").register is None
    assert "spark.sql.catalogImplementation" not in parse(tmp_path, {}).spark  # no register: as before
    own = parse(tmp_path, {"register": {"schema": "shop"}}, {"spark.sql.catalogImplementation": "in-memory"})
    assert own.spark["spark.sql.catalogImplementation"] == "in-memory" and "spark.sql.warehouse.dir" not in own.spark
    remote = parse(tmp_path, {"register": {"schema": "shop"}}, {"remote": "sc://127.0.0.1:15002"})
    assert remote.spark["spark.sql.catalogImplementation"] == "hive"  # the local engine's (`engine start`)
    with pytest.raises(ConfigError, match="unknown key 'schemas' in 'register': did you mean 'schema'"):
        parse(tmp_path, {"register": {"schemas": "shop"}})
    with pytest.raises(ConfigError, match="'schema' must be a schema name"):
        parse(tmp_path, {"register": {"schema": "shop; DROP"}})
    with pytest.raises(ConfigError, match="'snapshot_views' must be true or false"):
        parse(tmp_path, {"register": {"schema": "shop", "snapshot_views": "yes"}})


def test_a_metastore_server_named_in_spark_settings_is_the_catalog_instead_of_derby(tmp_path):
    config = parse(tmp_path, {"register": {"schema": "shop"}}, {"hive.metastore.uris": "thrift://127.0.0.1:9083"})
    assert config.spark["spark.sql.catalogImplementation"] == "hive"
    assert config.spark["spark.hadoop.hive.metastore.uris"] == "thrift://127.0.0.1:9083"
    assert "spark.hadoop.javax.jdo.option.ConnectionURL" not in config.spark  # no embedded Derby beside it
    assert not (tmp_path / "metastore").exists()
    two = parse(tmp_path, {}, {"hive.metastore.uris": "thrift://a:9083,thrift://b:9083"})
    assert two.spark["spark.hadoop.hive.metastore.uris"] == "thrift://a:9083,thrift://b:9083"
    with pytest.raises(ConfigError, match="hive.metastore.uris"):
        parse(tmp_path, {}, {"hive.metastore.uris": "http://127.0.0.1:9083"})


def test_a_loads_commit_is_found_by_its_tag_also_after_other_loads_commits(spark, tmp_path):
    path = str(tmp_path / "t")
    for load_id in ("A", "B", "A"):  # A, then B, then A again (a re-run): A's newest commit counts
        with tagged_commits(spark, [load_id, "Z"]):
            spark.range(1).write.format("delta").mode("append").save(path)
    assert spark.conf.get("spark.databricks.delta.commitInfo.userMetadata", None) is None  # restored
    assert committed_versions(spark, path, ["A", "B", "C"]) == {"A": 2, "B": 1}
    for _ in range(4):  # untagged commits of other writers after them: found further back in the history
        spark.range(1).write.format("delta").mode("append").save(path)
    assert committed_versions(spark, path, ["A", "B"]) == {"A": 2, "B": 1}


def test_registered_tables_snapshots_and_views_follow_the_loads(spark, tmp_path, capsys):
    schema = f"shop_{uuid.uuid4().hex[:8]}"  # the session's catalog is shared by the tests
    path = config_file(tmp_path, {"schema": schema, "snapshot_views": True})
    config = load_config(path)
    landing = config.source("shop").landing
    write_package(landing, "L1")
    normalize_loads(spark, config, "shop", ["L1"])
    assert spark.table(f"{schema}.{PARENT}").count() == 3
    assert spark.table(f"`{schema}`.`{CHILD}`").count() == 6
    first = snapshot_versions(spark, config, "shop")
    assert first.load_id == "L1" and set(first.versions) == {"_norm_raw_orders", PARENT, CHILD}

    write_package(landing, "L2", orders=2)
    normalize_loads(spark, config, "shop", ["L2"])
    names = {r.tableName for r in spark.sql(f"SHOW TABLES IN {schema}").collect()}
    assert {PARENT, CHILD, "_norm_raw_orders", "_norm_loads", "_norm_versions"} <= names
    latest = snapshot_versions(spark, config, "shop")
    assert latest.load_id == "L2" and all(latest.versions[t] > first.versions[t] for t in first.versions)
    assert read_snapshot(spark, config, "shop", PARENT, "L1").count() == 3
    assert read_snapshot(spark, config, "shop", CHILD).count() == 10
    assert spark.table(f"{schema}_snapshot.{CHILD}").count() == 10  # views pinned to the last complete load
    assert spark.table(f"{schema}.{PARENT}").count() == 5

    normalize_loads(spark, config, "shop", ["L1"])  # again: idempotent, the re-run is the newest complete load
    assert spark.table(f"{schema}.{PARENT}").count() == 5
    assert snapshot_versions(spark, config, "shop").load_id == "L1"
    assert read_snapshot(spark, config, "shop", PARENT, "L2").count() == 5
    with pytest.raises(LakenormError, match="load 'L9' is not complete"):
        snapshot_versions(spark, config, "shop", "L9")
    with pytest.raises(LakenormError, match="has no version in the snapshot"):
        read_snapshot(spark, config, "shop", "nope")

    assert commands.main(["--config", str(path), "snapshot", "--load-id", "L2"]) == 0
    out = capsys.readouterr().out
    assert "shop  load L2" in out and f"shop.{CHILD}" in out and f"version {latest.versions[CHILD]:>8}" in out


def test_a_snapshot_read_during_loads_never_mixes_a_parent_and_children_of_different_loads(spark, tmp_path):
    config = load_config(config_file(tmp_path))
    tables = SourceTables.of(config, "shop")
    landing = config.source("shop").landing
    loads = [f"C{i}" for i in range(1, 5)]
    for load_id in loads:
        write_package(landing, load_id)
    failures: list[BaseException] = []

    def load_one_by_one() -> None:
        try:
            for load_id in loads:
                normalize_loads(spark, config, "shop", [load_id])
        except BaseException as err:  # noqa: BLE001 - reported by the test
            failures.append(err)

    writer = threading.Thread(target=load_one_by_one)
    writer.start()
    seen = set()
    while writer.is_alive():
        try:
            snapshot = source_snapshot(spark, tables)
        except LakenormError:  # no load complete yet
            continue
        in_table = {t: {r[0] for r in read_at(spark, tables, snapshot, t).select("_norm_load_id").distinct().collect()}
                    for t in ("_norm_raw_orders", PARENT, CHILD)}
        expected = set(loads[:loads.index(snapshot.load_id) + 1])
        assert in_table == {t: expected for t in in_table}, (snapshot, in_table)
        seen.add(snapshot.load_id)
    writer.join()
    assert not failures, failures
    assert len(seen) >= 2  # the reader read while loads were committing
    children = read_table(spark, tables.path(CHILD)).select("_norm_load_id").distinct().collect()
    assert {r[0] for r in children} == set(loads)
