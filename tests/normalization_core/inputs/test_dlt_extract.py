"""`input: dlt_extract` (SPEC §2.4): packages made by real dlt's `pipeline.extract()`, to typed tables."""
from __future__ import annotations

import os
import shutil
from datetime import datetime, timezone
from decimal import Decimal

import pytest
import yaml

from lakenorm_app import commands
from normalization_core.configuration.config import parse_config
from normalization_core.inputs import source_input
from normalization_core.io.delta import read_table
from normalization_core.io.load_packages import Discovery
from normalization_core.passes.normalize import normalize_loads
from normalization_core.passes.pending import pending_packages

dlt = pytest.importorskip("dlt")
os.environ.setdefault("RUNTIME__DLTHUB_TELEMETRY", "false")
USER_COLUMNS = {"id": {"data_type": "bigint"}, "name": {"data_type": "text"},
                "seen_at": {"data_type": "timestamp"}, "balance": {"data_type": "decimal"}}


def extract(pipelines_dir, users: list[dict], events: list[dict]) -> str:
    """One dlt extract of the two resources; returns dlt's load ID."""
    @dlt.resource(name="users", primary_key="id", write_disposition="merge", columns=USER_COLUMNS)
    def users_resource():
        yield users

    @dlt.resource(name="events")
    def events_resource():
        yield events

    pipeline = dlt.pipeline(pipeline_name="shop", pipelines_dir=str(pipelines_dir), dataset_name="shop")
    info = pipeline.extract([users_resource(), events_resource()])
    return info.loads_ids[-1]


def test_extracted_packages_to_typed_tables(spark, tmp_path):
    pipes = tmp_path / "pipes"
    first = extract(pipes, [
        {"id": 1, "name": "ann", "seen_at": datetime(2024, 6, 1, 12, tzinfo=timezone.utc), "balance": Decimal("1.50")},
        {"id": 2, "name": "bob", "seen_at": datetime(2024, 6, 2, tzinfo=timezone.utc), "balance": Decimal("-2.25")}],
        [{"kind": "click", "at": datetime(2024, 6, 1, tzinfo=timezone.utc), "n": 1}])
    landing = pipes / "shop" / "normalize" / "extracted"
    config = parse_config({"warehouse": str(tmp_path / "wh"), "sources": [
        {"name": "shop", "landing": str(landing), "input": "dlt_extract", "settle_seconds": 0, "convention": "dlt"}]},
        base_dir=tmp_path)
    source = config.source("shop")

    [package] = pending_packages(spark, config, source).packages
    assert (package.load_id, package.streams) == (first, ("events", "users"))
    normalize_loads(spark, config, "shop", [first])

    users = read_table(spark, config.table_path("shop", "users"))
    assert {f.name: f.dataType.simpleString() for f in users.schema.fields if not f.name.startswith("_dlt")} == {
        "id": "bigint", "name": "string", "seen_at": "timestamp", "balance": "double"}
    assert [(r.id, r.name, r.seen_at, r.balance) for r in users.orderBy("id").collect()] == [
        (1, "ann", datetime(2024, 6, 1, 12), 1.5), (2, "bob", datetime(2024, 6, 2), -2.25)]
    events = read_table(spark, config.table_path("shop", "events"))
    assert {f.name: f.dataType.simpleString() for f in events.schema.fields if not f.name.startswith("_dlt")} == {
        "kind": "string", "at": "timestamp", "n": "bigint"}
    raw_ids = [r[0] for r in read_table(spark, config.table_path("shop", "_dlt_raw_users")).select("_dlt_raw_id").collect()]
    assert len(set(raw_ids)) == 2  # two items of one typed-jsonl line, two raw ids

    second = extract(pipes, [{"id": 1, "name": "ann b.", "seen_at": datetime(2024, 6, 3, tzinfo=timezone.utc),
                              "balance": Decimal("0")}], [])
    jobs = landing / second / "new_jobs"
    job = next(p for p in jobs.iterdir() if p.name.startswith("users."))
    shutil.copy(job, jobs / ("ghost." + job.name.split(".", 1)[1]))  # a table the package schema lacks
    found = pending_packages(spark, config, source)
    assert [p.load_id for p in found.packages] == [second]
    [ghost] = found.rejected
    assert "holds table 'ghost', which the package schema" in ghost.reason
    normalize_loads(spark, config, "shop", [second])
    current = read_table(spark, config.table_path("shop", "users")).orderBy("id").collect()
    assert [(r.id, r.name) for r in current] == [(1, "ann b."), (2, "bob")]  # merge -> append_dedup on id
    assert read_table(spark, config.table_path("shop", "users_scd")).count() == 3
    assert pending_packages(spark, config, source).packages == ()


def test_lakenorm_normalize_reads_a_package_right_after_extract(spark, tmp_path, capsys):
    """dlt's rename into `extracted/` is the completion signal: no `settle_seconds` wait (its default is 60 s and
    the package's files are seconds old), as `lakenorm normalize` runs right after `pipeline.extract()`."""
    ann = {"id": 1, "name": "ann", "seen_at": datetime(2024, 6, 1, tzinfo=timezone.utc), "balance": Decimal("1.50")}
    load_id = extract(tmp_path / "pipes", [ann], [{"kind": "click", "n": 1}])
    doc = {"warehouse": str(tmp_path / "wh"), "spark": {"master": "local[2]", "spark.sql.shuffle.partitions": "2"},
           "sources": [{"name": "shop", "landing": str(tmp_path / "pipes/shop/normalize/extracted"),
                        "input": "dlt_extract", "convention": "dlt"}]}
    (tmp_path / "lakenorm.yaml").write_text(yaml.safe_dump(doc))
    config = parse_config(doc, base_dir=tmp_path)
    assert config.source("shop").settle_seconds == 60  # the default
    code = commands.main(["--config", str(tmp_path / "lakenorm.yaml"), "normalize"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert f"shop  {load_id}  _dlt_raw_users" in out and f"shop  {load_id}  users " in out, out
    assert "settling" not in out and "nothing to normalize" not in out
    assert [r.name for r in read_table(spark, config.table_path("shop", "users")).collect()] == ["ann"]


def test_a_package_without_its_schema_yet_is_in_flight_not_rejected(tmp_path):
    """dlt's fallback when the folder rename fails (too many open files) moves files one by one, job files
    before the package's `schema.json`: until that is there the package is in flight, neither read nor rejected."""
    load_id = extract(tmp_path / "pipes", [{"id": 1, "name": "ann", "balance": Decimal("0")}], [])
    landing = tmp_path / "pipes" / "shop" / "normalize" / "extracted"
    config = parse_config({"warehouse": str(tmp_path / "wh"), "sources": [
        {"name": "shop", "landing": str(landing), "input": "dlt_extract", "convention": "dlt"}]}, base_dir=tmp_path)
    source = config.source("shop")
    schema = landing / load_id / "schema.json"
    schema.rename(tmp_path / "schema.json")
    assert source_input(source).discover(config, source) == Discovery((), ())
    (tmp_path / "schema.json").rename(schema)
    found = source_input(source).discover(config, source)
    assert ([p.load_id for p in found.packages], found.rejected, found.settling) == ([load_id], (), None)
