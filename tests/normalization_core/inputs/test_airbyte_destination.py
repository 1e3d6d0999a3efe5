"""`input: airbyte_destination` (SPEC §2.4): files as Airbyte's S3 destination writes them, to typed tables."""
from __future__ import annotations

import gzip
import hashlib
import json
import os

import pytest
from pyspark.sql import types as T

from normalization_core.configuration.config import parse_config
from normalization_core.errors import PackageError
from normalization_core.inputs.base import ledger_path
from normalization_core.inputs.checksums import checksum
from normalization_core.inputs.landing import record_changed_files
from normalization_core.inputs.ledger import LEDGER_SCHEMA, FileState, read_ledger
from normalization_core.inputs.listing import list_files
from normalization_core.io.delta import read_table
from normalization_core.io.load_writes import replace_loads
from normalization_core.io.local_rows import local_rows
from normalization_core.passes.normalize import normalize_loads
from normalization_core.passes.pending import pending_packages

DAY = "2024_06_01_1717200000000"


def jsonl(records: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def write(landing, relative: str, records: list[dict], age_seconds: int = 3600) -> None:
    path = landing / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    data = jsonl(records)
    path.write_bytes(gzip.compress(data) if relative.endswith(".gz") else data)
    past = path.stat().st_mtime - age_seconds
    os.utime(path, (past, past))


def source_config(tmp_path, settle_seconds: int = 60):
    (tmp_path / "landing").mkdir(exist_ok=True)
    return parse_config({"warehouse": "wh", "sources": [{
        "name": "shop", "landing": "landing", "input": "airbyte_destination", "settle_seconds": settle_seconds,
        "streams": {"orders": {"destination_sync_mode": "append_dedup", "primary_key": ["id"], "cursor_field": "id"}}}]},
        base_dir=tmp_path)


def rows(spark, config, table: str, order: str = "id") -> list[dict]:
    return [r.asDict() for r in read_table(spark, config.table_path("shop", table)).orderBy(order).collect()]


def test_v2_files_to_typed_tables_then_late_file_then_bad_files(spark, tmp_path, load_case):
    case = load_case("inputs/airbyte_destination.json")
    config = source_config(tmp_path)
    landing = config.source("shop").landing
    write(landing, f"public/orders/{DAY}_0.jsonl.gz", case["orders"])
    write(landing, f"public/customers/{DAY}_0.jsonl", case["customers"])

    found = pending_packages(spark, config, config.source("shop"))
    assert [(p.load_id, p.streams) for p in found.packages] == [("101", ("customers", "orders"))]
    [result] = normalize_loads(spark, config, "shop", ["101"])
    assert result.quarantined_lines == 1  # the V2 line without _airbyte_raw_id, kept in quarantine

    raw = rows(spark, config, "_norm_raw_orders", "_norm_line")
    assert [r["_norm_raw_id"] for r in raw] == [o["_airbyte_raw_id"] for o in case["orders"][:2]]
    assert [r["_norm_extracted_at"].timestamp() * 1000 for r in raw] == [1717200000000, 1717200001000]
    assert json.loads(raw[0]["_norm_data"]) == case["orders"][0]["_airbyte_data"]
    assert [[c.asDict() for c in r["_norm_upstream_changes"]] for r in raw] == [
        [], [{"field": "status", "change": "NULLED", "reason": "SOURCE_FIELD_SIZE_LIMITATION"}]]  # Airbyte's own
    quarantine = rows(spark, config, "_norm_quarantine", "_norm_line")
    assert [q["_norm_error"] for q in quarantine] == ["Airbyte V2 record has no _airbyte_raw_id"]
    assert json.loads(quarantine[0]["_norm_data"]) == case["orders"][2]

    orders = read_table(spark, config.table_path("shop", "orders"))
    assert {f.name: f.dataType.simpleString() for f in orders.schema.fields if not f.name.startswith("_norm")} == {
        "id": "bigint", "total": "double", "status": "string"}
    assert [(r["id"], r["total"], r["status"]) for r in rows(spark, config, "orders")] == [(1, 9.5, "paid"), (2, 20.25, None)]
    for table in ("orders", "orders_scd"):  # Airbyte's change is in the typed rows' meta too, not counted as lakenorm's
        assert [[c.asDict() for c in r["_norm_meta"]["changes"]] for r in rows(spark, config, table)] == [
            [], [{"field": "status", "change": "NULLED", "reason": "SOURCE_FIELD_SIZE_LIMITATION"}]], table
    nulled = {t: n.values for s in result.streams.values() for t, n in s.nulled.items()}
    assert nulled and set(nulled.values()) == {0}, nulled
    customers = rows(spark, config, "customers")
    assert [(r["id"], r["email"]) for r in customers] == [(7, "a@example.com"), (8, "b@example.com")]
    assert not any(k.startswith("_airbyte") for k in customers[0])  # root-level flattening: Airbyte's columns dropped

    assert pending_packages(spark, config, config.source("shop")).packages == ()  # the ledger: listed again, nothing new

    write(landing, f"public/orders/{DAY}_1.jsonl", case["late_orders"])  # a late part of sync 101
    [late] = pending_packages(spark, config, config.source("shop")).packages
    assert late.load_id.startswith("101.late-") and late.streams == ("orders",)
    normalize_loads(spark, config, "shop", [late.load_id])
    assert [r["id"] for r in rows(spark, config, "orders")] == [1, 2, 4]
    assert read_table(spark, config.table_path("shop", "_norm_raw_orders")).count() == 3

    write(landing, "public/orders/2024_06_02_1717300000000_0.jsonl", case["v1_orders"])  # V1 file, V2 folder
    write(landing, f"public/customers/{DAY}_0.jsonl", case["customers"][:1])  # re-uploaded, other content
    found = pending_packages(spark, config, config.source("shop"))
    assert found.packages == ()
    [v1] = found.rejected
    assert "V1 file in the folder of stream 'orders'" in v1.reason
    [reupload] = found.changed  # said, not rejected: it fails nothing
    assert reupload.load_id == "101" and reupload.warning.startswith("file 'public/customers/")
    assert "replaced by other content" in reupload.warning


def test_v1_files_load_by_epoch(spark, tmp_path, load_case):
    case = load_case("inputs/airbyte_destination.json")
    config = source_config(tmp_path)
    write(config.source("shop").landing, "orders/2024_06_02_1717300000000_0.jsonl.gz", case["v1_orders"])
    [package] = pending_packages(spark, config, config.source("shop")).packages
    assert package.load_id == "1717300000000"
    normalize_loads(spark, config, "shop", [package.load_id])
    [row] = rows(spark, config, "orders")
    assert (row["id"], row["total"], row["_norm_raw_id"]) == (5, 5.5, "a1000000-0000-4000-8000-000000000001")


def test_truncated_gzip_fails_its_load_naming_the_file(spark, tmp_path, load_case):
    case = load_case("inputs/airbyte_destination.json")
    config = source_config(tmp_path)
    landing = config.source("shop").landing
    write(landing, f"public/orders/{DAY}_0.jsonl.gz", case["orders"][:2] * 200)
    path = landing / f"public/orders/{DAY}_0.jsonl.gz"
    path.write_bytes(path.read_bytes()[:-40])
    os.utime(path, (path.stat().st_mtime - 3600,) * 2)
    with pytest.raises(PackageError, match=r"orders/2024_06_01_1717200000000_0.jsonl.gz.*truncated"):
        normalize_loads(spark, config, "shop", ["101"])
    assert pending_packages(spark, config, config.source("shop")).packages[0].load_id == "101"  # nothing recorded


def test_file_still_being_written_is_not_listed(tmp_path, load_case):
    case = load_case("inputs/airbyte_destination.json")
    config = source_config(tmp_path, settle_seconds=600)
    source = config.source("shop")
    write(source.landing, f"public/orders/{DAY}_0.jsonl", case["orders"], age_seconds=0)
    from normalization_core.inputs import source_input

    assert source_input(source).discover(config, source).packages == ()
    path = source.landing / f"public/orders/{DAY}_0.jsonl"
    os.utime(path, (path.stat().st_mtime - 601,) * 2)
    assert [p.load_id for p in source_input(source).discover(config, source).packages] == ["101"]


def test_touched_file_is_the_same_a_replaced_one_is_said_once_and_read_when_its_load_is_asked_for(
        spark, tmp_path, load_case):
    case = load_case("inputs/airbyte_destination.json")
    config = source_config(tmp_path)
    source = config.source("shop")
    write(source.landing, f"public/customers/{DAY}_0.jsonl", case["customers"])
    normalize_loads(spark, config, "shop", ["101"])
    customers = source.landing / f"public/customers/{DAY}_0.jsonl"

    os.utime(customers, (customers.stat().st_mtime + 60,) * 2)  # touched: the same bytes, another time
    found = pending_packages(spark, config, source)
    assert (found.packages, found.rejected) == ((), ())
    assert [(c.load_id, c.replaced, c.warning) for c in found.changed] == [("101", False, None)]
    record_changed_files(spark, config, source, found.changed)
    assert pending_packages(spark, config, source).changed == ()  # recorded: not compared again

    other = jsonl(case["customers"]).replace(b"a@example.com", b"z@example.com")
    assert len(other) == customers.stat().st_size
    customers.write_bytes(other)  # replaced: the same size, other bytes
    os.utime(customers, (customers.stat().st_mtime - 3600,) * 2)
    [replaced] = pending_packages(spark, config, source).changed
    assert replaced.replaced and f"other content ({len(other)} bytes; it had {len(other)})" in replaced.warning
    record_changed_files(spark, config, source, [replaced])
    assert pending_packages(spark, config, source).changed == ()  # said once
    assert [r["email"] for r in rows(spark, config, "customers")] == ["a@example.com", "b@example.com"]  # not read

    normalize_loads(spark, config, "shop", ["101"])  # as the warning says: `normalize --load-id 101`
    assert [r["email"] for r in rows(spark, config, "customers")] == ["z@example.com", "b@example.com"]
    [entry] = read_ledger(ledger_path(config, source)).values()
    assert entry.read == FileState(list_files(source.landing, (".jsonl",))[0], checksum(source.landing, entry.file))
    assert entry.read.checksum == "sha256:" + hashlib.sha256(other).hexdigest() and entry.replaced is None
    assert pending_packages(spark, config, source).changed == ()


def test_a_ledger_without_checksums_gains_them_and_says_a_modified_file_once(spark, tmp_path, load_case):
    """A ledger an earlier lakenorm wrote (no checksum, no status): its file is the same while unchanged; touched, it
    is said once (whether its bytes changed is not known), and the ledger gets the new columns."""
    config = source_config(tmp_path)
    source = config.source("shop")
    write(source.landing, f"public/customers/{DAY}_0.jsonl", load_case("inputs/airbyte_destination.json")["customers"])
    [entry] = list_files(source.landing, (".jsonl",))
    path = ledger_path(config, source)
    earlier = T.StructType(LEDGER_SCHEMA.fields[:4])
    replace_loads(local_rows(spark, [("101", entry.path, entry.size, entry.modified_ms)], earlier), path, "load_id",
                  ["101"])
    assert pending_packages(spark, config, source).changed == ()
    customers = source.landing / entry.path
    os.utime(customers, (customers.stat().st_mtime + 60,) * 2)
    [change] = pending_packages(spark, config, source).changed
    assert change.replaced and "whether its bytes changed is not known" in change.warning
    record_changed_files(spark, config, source, [change])
    assert read_table(spark, path).columns == LEDGER_SCHEMA.fieldNames()
    assert pending_packages(spark, config, source).changed == ()
