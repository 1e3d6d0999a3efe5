"""Landing and warehouse in an S3 bucket (SPEC §2.3, §2.4): moto's S3 server on loopback, files uploaded as
their producer writes them, `lakenorm normalize`, and the same tables, rows and columns as a local run."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import yaml
from delta.tables import DeltaTable

from normalization_core.cli import list_tables, main
from normalization_core.config import load_config
from normalization_core.io.delta import read_table
from normalization_core.io.spark import build_spark_session
from normalization_core.samples import SampleSpec, write_catalog, write_sample_packages

pytestmark = pytest.mark.slow
DAY = "2024_06_01_1717200000000"
VOLATILE = ("normalized_at", "inserted_at", "modified_ms")
"""Columns that hold when a run happened (or a file's upload time), not what it produced."""


def write_config(folder: Path, warehouse: str, source: dict, endpoint: str | None = None) -> Path:
    doc = {"warehouse": warehouse, "sources": [source]}
    if endpoint:
        doc["object_store"] = {"endpoint": endpoint, "region": "us-east-1"}
    path = folder / "lakenorm.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def normalize(config_file: Path, capsys) -> str:
    assert main(["--config", str(config_file), "normalize"]) == 0, capsys.readouterr().err
    return capsys.readouterr().out


def snapshot(spark, config_file: Path) -> dict[str, tuple[list[str], list[tuple]]]:
    """Every table of the source: its columns and its rows (sorted), without the run-time columns."""
    config = load_config(config_file)
    spark = build_spark_session(config.spark)
    source = config.sources[0]
    tables = {}
    for table in list_tables(config, source):
        df = read_table(spark, config.table_path(source.name, table))
        df = df.drop(*[c for c in df.columns if c.endswith(VOLATILE)])
        tables[table] = (df.columns, sorted((tuple(map(repr, r)) for r in df.collect())))  # test: assert rows
    return tables


def table_versions(spark, config_file: Path) -> dict[str, int]:
    config = load_config(config_file)
    source = config.sources[0]
    return {t: DeltaTable.forPath(spark, config.table_path(source.name, t)).history(1).first()["version"]
            for t in list_tables(config, source)}


def assert_same_tables_and_idempotent(spark, local: Path, remote: Path, capsys, expected: set[str]) -> None:
    normalize(local, capsys)
    out = normalize(remote, capsys)
    local_tables, remote_tables = snapshot(spark, local), snapshot(spark, remote)
    assert set(remote_tables) == set(local_tables) and expected <= set(remote_tables)
    for table, (columns, rows) in local_tables.items():
        assert remote_tables[table][0] == columns, table
        assert remote_tables[table][1] == rows, table
        assert rows or table.endswith("quarantine"), f"{table} is empty: the comparison would prove nothing"
    assert "rows" in out
    before = table_versions(spark, remote)
    assert "nothing to normalize" in normalize(remote, capsys)  # the registry / ledger in the bucket
    assert table_versions(spark, remote) == before  # nothing was written again


def test_manifest_packages_in_a_bucket_equal_a_local_run(spark, tmp_path, s3_bucket, capsys):
    local_landing = tmp_path / "local" / "landing"
    write_sample_packages(local_landing, SampleSpec(packages=2, orders=30, customers=8, events=20))
    catalog = write_catalog(tmp_path / "catalog.json")
    s3_bucket.upload_tree(local_landing, "landing/shop")
    source = {"name": "shop", "catalog": str(catalog)}
    local = write_config(tmp_path / "local", "warehouse", {**source, "landing": "landing"})
    (tmp_path / "remote").mkdir()
    remote = write_config(tmp_path / "remote", s3_bucket.uri("warehouse"),
                          {**source, "landing": s3_bucket.uri("landing/shop")}, s3_bucket.endpoint)
    assert_same_tables_and_idempotent(spark, local, remote, capsys,
                                      {"orders", "orders_scd", "customers", "_norm_loads", "_norm_versions"})


def airbyte_files(case: dict) -> dict[str, bytes]:
    """Two streams of sync 101 as Airbyte's S3 destination writes them (one gzip part, one plain)."""
    lines = {name: "".join(json.dumps(r) + "\n" for r in case[name]).encode() for name in ("orders", "customers")}
    return {f"public/orders/{DAY}_0.jsonl.gz": gzip.compress(lines["orders"]),
            f"public/customers/{DAY}_0.jsonl": lines["customers"]}


def test_airbyte_destination_files_in_a_bucket_equal_a_local_run(spark, tmp_path, s3_bucket, capsys, load_case):
    files = airbyte_files(load_case("inputs/airbyte_destination.json"))
    for relative, data in files.items():
        (tmp_path / "local" / "landing" / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "local" / "landing" / relative).write_bytes(data)
        s3_bucket.client.put_object(Bucket=s3_bucket.name, Key=f"airbyte/{relative}", Body=data)
    source = {"name": "shop", "input": "airbyte_destination", "settle_seconds": 0,
              "streams": {"orders": {"destination_sync_mode": "append_dedup", "primary_key": ["id"],
                                     "cursor_field": "id"}}}
    local = write_config(tmp_path / "local", "warehouse", {**source, "landing": "landing"})
    (tmp_path / "remote").mkdir()
    remote = write_config(tmp_path / "remote", s3_bucket.uri("warehouse"),
                          {**source, "landing": s3_bucket.uri("airbyte")}, s3_bucket.endpoint)
    assert_same_tables_and_idempotent(spark, local, remote, capsys,
                                      {"orders", "orders_scd", "customers", "_norm_files", "_norm_quarantine"})
