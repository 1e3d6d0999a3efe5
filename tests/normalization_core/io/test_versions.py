"""`_norm_versions` (SPEC §3, §5.3): a row per new schema of a stream, none for a known one, none twice."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from normalization_core.io import versions
from normalization_core.io.delta import read_table
from normalization_core.io.versions import latest_versions, record_version, record_versions
from normalization_core.schema import schema_hash
from normalization_core.schema.inference import evolve, infer_schema

FIRST = infer_schema("things", {(("k:id",), "bigint")})
SECOND = evolve(FIRST, {(("k:id",), "text"), (("k:name",), "text")})


def test_versions_count_up_per_stream_and_a_known_schema_adds_nothing(spark, tmp_path):
    path = str(tmp_path / "_norm_versions")
    assert record_version(spark, path, FIRST).version == 1
    assert record_version(spark, path, FIRST).version == 1
    assert record_version(spark, path, SECOND).version == 2
    assert record_version(spark, path, infer_schema("other", {(("k:x",), "bool")})).version == 1
    rows = sorted((r["stream"], r["version"], r["version_hash"]) for r in read_table(spark, path).collect())
    assert rows == [("other", 1, rows[0][2]), ("things", 1, schema_hash(FIRST)), ("things", 2, schema_hash(SECOND))]
    latest = latest_versions(spark, path)
    assert latest["things"].schema == SECOND and latest["things"].version == 2


def test_concurrent_runs_storing_one_schema_store_it_once(spark, tmp_path):
    path = str(tmp_path / "_norm_versions")
    record_version(spark, path, FIRST)
    with ThreadPoolExecutor(3) as pool:
        stored = list(pool.map(lambda _: record_version(spark, path, SECOND), range(3)))
    assert {s.version for s in stored} == {2}
    assert sorted(r["version"] for r in read_table(spark, path).collect()) == [1, 2]


def test_a_table_another_run_created_after_the_check_gets_no_second_row(spark, tmp_path, monkeypatch):
    path = str(tmp_path / "_norm_versions")
    record_version(spark, path, FIRST)  # the other run, which created the table
    checks = []  # this run's two first looks (its stored versions, then the table) still find no table (seen
    exists, opened = versions.is_delta_table, versions.open_delta_table  # under a daemon)

    def late_exists(spark, p):
        checks.append(p)
        return len(checks) > 2 and exists(spark, p)

    def late_open(p, options):
        checks.append(p)
        return opened(p, options) if len(checks) > 2 else None

    monkeypatch.setattr(versions, "is_delta_table", late_exists)
    monkeypatch.setattr(versions, "open_delta_table", late_open)
    assert record_version(spark, path, FIRST).version == 1
    assert len(checks) > 2, "the creation failed and was retried"
    assert [r["version"] for r in read_table(spark, path).collect()] == [1]


def test_recording_several_schemas_stores_only_the_new_ones(spark, tmp_path):
    path = str(tmp_path / "_norm_versions")
    other = infer_schema("other", {(("k:x",), "bool")})
    assert [v.version for v in record_versions(spark, path, [FIRST, other])] == [1, 1]
    stored = record_versions(spark, path, [SECOND, other])
    assert [(v.stream, v.version, v.version_hash) for v in stored] == [
        ("things", 2, schema_hash(SECOND)), ("other", 1, schema_hash(other))]
    assert sorted((r["stream"], r["version"]) for r in read_table(spark, path).collect()) == [
        ("other", 1), ("things", 1), ("things", 2)]
