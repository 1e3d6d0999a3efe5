"""Several loads in one pass (`normalize_loads`, what a Dagster backfill or `lakenorm normalize` runs) give the
same tables as normalizing them one by one, for every disposition, and as a pass with Spark's own settings instead
of the small-input ones (`runtime.spark.small_input_conf`); a bad package does not stop the others."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from lakenorm_app.samples import SampleSpec, write_catalog, write_sample_packages
from normalization_core import columns as C
from normalization_core.configuration.config import parse_config
from normalization_core.errors import PackageError
from normalization_core.io.delta import read_table
from normalization_core.io.load_packages import discover_packages
from normalization_core.passes.normalize import normalize_load, normalize_loads
from normalization_core.passes.pending import loads_input_bytes, pending_input_bytes
from normalization_core.runtime import spark as spark_settings

STREAMS = {"events": {"destination_sync_mode": "overwrite"}}
"""orders and customers: append_dedup (sample catalog); events: overwrite; the inferred stream: append."""
VOLATILE = ("_norm_normalized_at", C.LOADS_NORMALIZED_AT, C.VERSIONS_INSERTED_AT, C.LOADS_ROWS,
            C.LOADS_TABLE_VERSIONS)
"""Times of the run, and the registry's rows per table (a pass reports the rows its loads hold, see below)."""
INFERRED = [['{"id": 1, "at": "2024-06-01T10:00:00Z", "items": [{"n": 1}]}', "not json"],
            ['{"id": 2, "at": "2024-06-02T10:00:00Z", "items": [{"n": 2}, {"n": 3}]}']]
"""Same keys and kinds in both loads: a pass infers from all of its loads at once, like a rebuild, where load
by load a later kind or key evolves the schema (other column order, variant columns)."""


def warehouse(tmp_path, name):
    landing = tmp_path / "landing"
    if not landing.exists():
        landing.mkdir()
        write_catalog(tmp_path / "catalog.json")
        ids = write_sample_packages(landing, SampleSpec(packages=3, orders=20, customers=8, events=6, update_ratio=0.5))
        for load_id, lines in zip(ids[1:], INFERRED):  # a stream with no catalog entry, in two of the loads
            _add_stream(landing / load_id, "clicks", lines)
    source = {"name": "shop", "landing": "landing", "catalog": "catalog.json", "streams": STREAMS}
    return parse_config({"warehouse": name, "sources": [source]}, base_dir=tmp_path)


def _add_stream(package, stream, lines):
    (package / f"{stream}.jsonl").write_text("".join(line + "\n" for line in lines))
    manifest = json.loads((package / "_manifest.json").read_text())
    manifest["streams"][stream] = {"files": [f"{stream}.jsonl"], "records": len(lines)}
    (package / "_manifest.json").write_text(json.dumps(manifest))


def tables(spark, cfg):
    root = Path(cfg.table_path("shop", "x")).parent
    found = {}
    for name in sorted(os.listdir(root)):
        df = read_table(spark, f"{root}/{name}")
        df = df.drop(*[c for c in df.columns if c in VOLATILE])
        found[name] = sorted(tuple(str(v) for v in row) for row in df.collect())
    return found


@pytest.mark.slow
def test_one_pass_equals_load_by_load_under_sparks_own_settings(spark, tmp_path, monkeypatch):
    """The pass runs with the small-input settings (no adaptive execution, no code generation: every other test's
    packages are small too); load by load runs with Spark's own settings. Both give the same tables."""
    one_by_one, batched = warehouse(tmp_path, "wh_single"), warehouse(tmp_path, "wh_batch")
    ids = [p.load_id for p in discover_packages(one_by_one.source("shop").landing, "shop").packages]
    with monkeypatch.context() as large_inputs:
        large_inputs.setattr(spark_settings, "SMALL_INPUT_BYTES", 0)
        singles = [normalize_load(spark, one_by_one, "shop", load_id) for load_id in ids]
    assert spark.conf.get("spark.sql.codegen.factoryMode", "FALLBACK") == "FALLBACK"
    results = normalize_loads(spark, batched, "shop", ids)

    assert [r.load_id for r in results] == ids
    for single, batch in zip(singles, results):
        for stream, expected in single.streams.items():
            got = batch.streams[stream]
            assert (got.raw_lines, got.rejected_lines, got.schema_version_hash) == (
                expected.raw_lines, expected.rejected_lines, expected.schema_version_hash)
            if stream == "clicks" or (stream == "events" and batch is results[-1]):  # append: per load; overwrite: newest
                assert got.typed_rows == expected.typed_rows
    assert all(not r.streams["events"].typed_rows for r in results[:-1])  # overwritten anyway: never written
    expected_tables = tables(spark, one_by_one)
    assert {"orders_scd", "customers", "events", "orders__line_items", "clicks", "clicks__items"} <= set(expected_tables)
    assert tables(spark, batched) == expected_tables


@pytest.mark.slow
def test_a_bad_package_fails_alone(spark, tmp_path):
    cfg = warehouse(tmp_path, "wh")
    ids = [p.load_id for p in discover_packages(cfg.source("shop").landing, "shop").packages]
    bad = cfg.source("shop").landing / ids[1] / "orders" / "part-00000.jsonl.gz"
    bad.write_bytes(bad.read_bytes()[:-40])  # truncated gzip
    with pytest.raises(PackageError, match="part-00000.jsonl.gz"):
        normalize_loads(spark, cfg, "shop", ids)
    loads = {r["load_id"] for r in read_table(spark, cfg.table_path("shop", "_norm_loads")).collect()}
    assert loads == {ids[0]}  # loads before the bad one landed; the bad one left nothing



def test_the_bytes_of_named_loads_are_their_files_sizes_looked_up_without_spark(tmp_path):
    cfg = warehouse(tmp_path, "wh")
    landing = tmp_path / "landing"
    ids = sorted(p.name for p in landing.iterdir())
    data = {i: sum(f.stat().st_size for f in (landing / i).rglob("*") if f.is_file() and f.name != "_manifest.json")
            for i in ids}
    assert loads_input_bytes(cfg, "shop", ids[:1]) == data[ids[0]] > 0
    assert loads_input_bytes(cfg, "shop", [ids[1], ids[2], ids[1]]) == data[ids[1]] + data[ids[2]]
    assert loads_input_bytes(cfg, "shop", [ids[0], "1999999999.000000"]) is None  # not landed: unknown
    assert pending_input_bytes(cfg, "shop") == sum(data.values())  # manifest packages: every one landed
