"""Landing and warehouse in an S3 bucket (SPEC §2.3, §2.4): moto's S3 server on loopback, files uploaded as
their producer writes them, `lakenorm normalize`, and the same tables, rows and columns as a local run.
(Manifest packages in a bucket: test_cluster.py, whose run writes to a bucket too.)"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from lakenorm_app.commands import main
from tests.normalization_core.table_snapshots import (
    assert_same_tables,
    normalize,
    write_config,
)

pytestmark = pytest.mark.slow
DAY = "2024_06_01_1717200000000"


def assert_same_tables_and_idempotent(bucket, local: Path, remote: Path, capsys, expected: set[str]) -> None:
    normalize(local, capsys)
    assert "rows" in normalize(remote, capsys)
    assert_same_tables(local, remote, expected)
    before = bucket.objects("warehouse/")
    assert "nothing to normalize" in normalize(remote, capsys)  # the registry / ledger in the bucket
    assert bucket.objects("warehouse/") == before  # nothing was written again


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
    remote = write_config(tmp_path / "remote", s3_bucket.uri("warehouse"),
                          {**source, "landing": s3_bucket.uri("airbyte")}, s3_bucket.endpoint)
    assert_same_tables_and_idempotent(s3_bucket, local, remote, capsys,
                                      {"orders", "orders_scd", "customers", "_norm_files", "_norm_quarantine"})
    written = s3_bucket.objects("warehouse/")
    for relative, data in files.items():  # uploaded again, the same bytes (a sync): a new time, the same ETag
        s3_bucket.client.put_object(Bucket=s3_bucket.name, Key=f"airbyte/{relative}", Body=data)
    assert main(["--config", str(remote), "normalize"]) == 0
    assert capsys.readouterr() == ("shop: nothing to normalize\n", "")  # no warning
    assert {k: e for k, e in s3_bucket.objects("warehouse/").items() if "/_norm_files/" not in k} == {
        k: e for k, e in written.items() if "/_norm_files/" not in k}  # no table written again but the ledger
