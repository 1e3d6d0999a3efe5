"""append_dedup (SPEC §6, §7): version order, duplicates, CDC deletes, composite keys, incremental MERGE
runs in any order and again, children of every version, rebuild from raw."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from delta.tables import DeltaTable
from pyspark.sql import functions as F

from lakenorm_app.commands import main as cli_main
from normalization_core.columns import NATIVE as N
from normalization_core.configuration.catalog import parse_catalog
from normalization_core.dispositions import dedup_writes
from normalization_core.dispositions import touched_keys
from normalization_core.dispositions.append_dedup import parse_versions, scd_history, write_dedup_tables
from normalization_core.errors import ConfigError
from normalization_core.io import delta
from normalization_core.io.delta import MAX_ATTEMPTS, read_table
from normalization_core.passes.normalize import normalize_load
from normalization_core.plans.source_tables import SourceTables
from normalization_core.plans.stream_plans import StreamPlan
from normalization_core.schema import schema_from_json_schema
from normalization_core.schema.model import root_table
from normalization_core.transform import raw as R
from normalization_core.transform.scd import KeyRange, ScdColumns, current_columns, key_bounds, scd_columns
from tests.normalization_core.scd_helpers import STREAM, case_config, catalog_doc, projected, table_rows

CASES = ["cursor_order", "cdc_updated_at_tiebreak", "cdc_log_pos_tiebreak", "extracted_at_tiebreak",
         "load_id_tiebreak", "position_tiebreak", "exact_duplicates", "cdc_delete",
         "cursor_fallback_cdc_updated_at", "cursor_fallback_extracted_at", "composite_key_collision",
         "out_of_order_with_children"]


def plan_of(case) -> StreamPlan:
    settings = parse_catalog(catalog_doc(case))[STREAM]
    return StreamPlan(settings, schema_from_json_schema(STREAM, settings.json_schema, convention="native",
                                                        max_identifier_length=255, max_table_nesting=1000))


def raw_frame(spark, packages):
    """The raw rows the pipeline would write for these packages (one file per package)."""
    rows = [(p["load_id"], p["created_at"], json.dumps(r), f"{STREAM}/part-00000.jsonl", i)
            for p in packages for i, r in enumerate(p["records"], 1)]
    df = spark.createDataFrame(rows, "lid string, created string, data string, file string, line long")
    return df.select(
        R.raw_id(F.col("lid"), F.col("file"), F.col("line")).alias(N.raw_id), F.col("lid").alias(N.load_id),
        F.to_timestamp("created").alias(N.extracted_at), F.col("data").alias(N.data),
        F.col("file").alias(N.file), F.col("line").alias(N.line), F.lit(None).cast("string").alias(N.error))


def assert_rows(df, expected):
    actual, wanted = projected(df, expected)
    assert actual == wanted


@pytest.mark.parametrize("name", CASES)
def test_history_and_current_of_each_case(spark, load_case, name):
    case = load_case(f"scd/{name}.json")
    plan = plan_of(case)
    history = scd_history(parse_versions(raw_frame(spark, case["packages"]), N, plan.schema), N, plan).cache()
    actual, expected = projected(history, case["expected_history"])
    assert actual == expected, case["description"]
    actual, expected = projected(history.where(N.is_current), case["expected_current"])
    assert actual == expected, case["description"]
    keys = [c[0] for c in case["primary_key"]]
    assert history.select(*keys).distinct().count() == history.select(N.unique_key).distinct().count()
    assert history.select(N.row_id(STREAM)).distinct().count() == history.count()


def test_append_dedup_without_primary_key_is_a_configuration_error_naming_the_stream(load_case):
    case = {**load_case("scd/cursor_order.json"), "primary_key": []}
    plan = plan_of(case)
    with pytest.raises(ConfigError, match="stream 'items'.*primary_key"):
        scd_columns(plan.settings, root_table(plan.schema))


@pytest.mark.slow
def test_loads_in_any_order_and_again_give_the_history_current_and_children_of_a_rebuild(spark, tmp_path, load_case):
    case = load_case("scd/out_of_order_with_children.json")
    config = case_config(tmp_path, case)
    for load_id in case["order"]:  # late package first, then re-runs
        normalize_load(spark, config, "src", load_id)
    table = lambda name: read_table(spark, config.table_path("src", name)).cache()  # noqa: E731
    history, current, lines = table(f"{STREAM}_scd"), table(STREAM), table(f"{STREAM}__lines")

    assert_rows(history, case["expected_history"])
    assert_rows(current, case["expected_current"])
    assert lines.count() == case["expected_children"]
    parent, row = lines[N.parent_id(STREAM)], N.row_id(STREAM)
    assert lines.join(history, parent == history[row], "left_anti").count() == 0  # no orphans
    assert_rows(current.join(lines, current[row] == parent).select("id", "sku"), case["expected_current_children"])
    assert current.select(row).join(history.where(N.is_current), row).count() == current.count()

    incremental = {t: table_rows(df) for t, df in (("h", history), ("c", current), ("l", lines))}
    (tmp_path / "lakenorm.yaml").write_text(json.dumps({"warehouse": "wh", "sources": [
        {"name": "src", "landing": "landing", "catalog": "catalog.json"}]}), encoding="utf-8")
    config_file = str(tmp_path / "lakenorm.yaml")
    assert cli_main(["--config", config_file, "rebuild", "--source", "src", "--stream", STREAM]) == 0
    rebuilt = {t: table_rows(read_table(spark, config.table_path("src", n)))
               for t, n in (("h", f"{STREAM}_scd"), ("c", STREAM), ("l", f"{STREAM}__lines"))}
    assert rebuilt == incremental


VERSION = st.fixed_dictionaries({"id": st.integers(1, 3), "seq": st.one_of(st.none(), st.integers(0, 3)),
                                 "v": st.sampled_from(["a", "b"])})


@pytest.mark.slow
@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_packages_in_random_order_with_repeats_give_the_tables_of_arrival_order_and_of_a_rebuild(
        spark, tmp_path_factory, load_case, data):
    """Random versions split into packages (some created at the same time); MERGE runs in a random order
    with repeats == in arrival order == the whole history computed at once."""
    records = data.draw(st.lists(VERSION, min_size=1, max_size=8), label="records")
    count = data.draw(st.integers(1, 3), label="packages")
    where = data.draw(st.lists(st.integers(0, count - 1), min_size=len(records), max_size=len(records)))
    created = ["2024-01-01T00:00:00Z", "2024-01-01T00:00:00Z", "2024-01-02T00:00:00Z"]
    packages = [{"load_id": f"P{i}", "created_at": created[i],
                 "records": [r for r, w in zip(records, where) if w == i]} for i in range(count)]
    order = data.draw(st.permutations(range(count))) + data.draw(st.lists(st.integers(0, count - 1), max_size=2))
    case = {**load_case("scd/cursor_order.json"), "packages": packages}
    plan = plan_of(case)

    def incremental(sequence: list[int]) -> list[str]:
        config = case_config(tmp_path_factory.mktemp("wh"), case)
        for i in sequence:
            rows = raw_frame(spark, [packages[i]])
            write_dedup_tables(spark, SourceTables.of(config, "src"), plan, rows, [f"P{i}"])
        return [table_rows(read_table(spark, config.table_path("src", t))) for t in (f"{STREAM}_scd", STREAM)]

    history = scd_history(parse_versions(raw_frame(spark, packages), N, plan.schema), N, plan)
    current = history.where(N.is_current).select(*current_columns(N, history.columns))
    assert incremental(order) == incremental(list(range(count))) == [table_rows(history), table_rows(current)]


@pytest.mark.slow
def test_loads_committing_while_a_load_merges_give_the_tables_of_all_loads_at_once(
        spark, tmp_path, load_case, monkeypatch, caplog):
    """Concurrent runs of one stream: after load P1 built the rows of its history's key range, P2 commits
    all its tables; after P1 built the rows of its current table, P3 does. P1's history write reads the history
    in its own transaction (so it sees P2's versions: no key with two current versions), and its current write,
    built from a history P3 changed since, runs again. The tables equal all loads' history computed at once."""
    versions = [[(1, "a", 0), (2, "a", 0)], [(1, "b", 1)], [(1, "c", 2), (2, "b", 1)], [(1, "d", 3)]]
    packages = [{"load_id": f"P{i}", "created_at": "2024-01-01T00:00:00Z",
                 "records": [{"id": k, "v": v, "seq": seq} for k, v, seq in records]}
                for i, records in enumerate(versions)]
    case = {**load_case("scd/cursor_order.json"), "packages": packages}
    plan = plan_of(case)
    config = case_config(tmp_path, case)
    history_path, current_path = config.table_path("src", f"{STREAM}_scd"), config.table_path("src", STREAM)

    def load(i: int) -> None:
        write_dedup_tables(spark, SourceTables.of(config, "src"), plan, raw_frame(spark, [packages[i]]), [f"P{i}"])

    replace_slice = dedup_writes.replace_slice
    committing = {history_path: 2, current_path: 3}
    """Which load commits right after P1 built its source for the table at that path."""

    def replace_while_another_load_commits(spark, path, slice_rows, *args, **kwargs):
        def rows_then_another_load():
            rows = slice_rows()
            if path in committing:
                with monkeypatch.context() as unpatched:  # that load's own writes run undisturbed
                    unpatched.setattr(dedup_writes, "replace_slice", replace_slice)
                    load(committing.pop(path))
            return rows
        return replace_slice(spark, path, rows_then_another_load, *args, **kwargs)

    load(0)  # (creates the tables)
    monkeypatch.setattr(dedup_writes, "replace_slice", replace_while_another_load_commits)
    load(1)

    assert not committing
    history = scd_history(parse_versions(raw_frame(spark, packages), N, plan.schema), N, plan)
    current = history.where(N.is_current).select(*current_columns(N, history.columns))
    assert [table_rows(read_table(spark, p)) for p in (history_path, current_path)] == [
        table_rows(history), table_rows(current)]
    assert sorted((r["id"], r["v"]) for r in read_table(spark, current_path).collect()) == [(1, "d"), (2, "b")]
    retried = [r.getMessage() for r in caplog.records if r.name == "lakenorm" and r.levelname == "WARNING"]
    assert len(retried) == 1 and f"concurrent commit on {current_path} (attempt 1 of {MAX_ATTEMPTS})" in retried[0]


def update_of_1000_keys(spark, tmp_path, load_case, updated: list, **source) -> list[str]:
    """Keys 1-1,000 and the NULL key loaded (P0), then `updated` of them (P1), into a source with `source`'s
    settings; the history and current tables' paths, once checked to equal both loads' history at once."""
    records = lambda ids, v, seq: [{"id": k, "v": v, "seq": seq} for k in ids]  # noqa: E731
    packages = [{"load_id": "P0", "created_at": "2024-01-01T00:00:00Z",
                 "records": records([*range(1000, 0, -1), None], "a", 0)},
                {"load_id": "P1", "created_at": "2024-01-02T00:00:00Z", "records": records(updated, "b", 1)}]
    case = {**load_case("scd/cursor_order.json"), "packages": packages}
    plan, config = plan_of(case), case_config(tmp_path, case, **source)
    for package in packages:
        write_dedup_tables(spark, SourceTables.of(config, "src"), plan, raw_frame(spark, [package]),
                           [package["load_id"]])
    paths = [config.table_path("src", f"{STREAM}_scd"), config.table_path("src", STREAM)]
    history = scd_history(parse_versions(raw_frame(spark, packages), N, plan.schema), N, plan)
    current = history.where(N.is_current).select(*current_columns(N, history.columns))
    assert [table_rows(read_table(spark, p)) for p in paths] == [table_rows(history), table_rows(current)]
    return paths


def test_an_update_to_a_range_of_keys_rewrites_only_the_files_of_that_range(spark, tmp_path, load_case, monkeypatch):
    """The first load writes the tables in key order (11 files of at most 100 rows here); an update to keys 101-110
    and the NULL key rewrites the files of those keys only (in the history, of their newest rows), and the tables
    equal all loads' history at once."""
    monkeypatch.setattr(delta, "KEY_ORDERED_FILE_ROWS", 100)
    in_range = "(`id` BETWEEN 101 AND 110 OR `id` IS NULL)"
    history, current = update_of_1000_keys(spark, tmp_path, load_case, [*range(101, 111), None])
    for path, predicate in [(history, f"{in_range} AND `_norm_valid_to` IS NULL"), (current, in_range)]:
        commit = DeltaTable.forPath(spark, path).history(1).first()
        metrics = commit["operationMetrics"]
        assert len(list(Path(path).glob("*.parquet"))) - int(metrics["numFiles"]) == 11  # the first load's
        assert commit["operation"] == "WRITE"  # one replaceWhere of the touched keys' range
        assert commit["operationParameters"]["predicate"] == predicate
        assert int(metrics["numDeletedRows"]) == 11  # the range's rows, written again with the update
        assert int(metrics["numRemovedFiles"]) <= 3  # the NULL key's file and those of 101-110
        assert int(metrics["numCopiedRows"]) < 300


def test_updates_in_cursor_order_leave_the_closed_history_rows_alone_and_a_late_load_recomputes_them(
        spark, tmp_path, load_case, monkeypatch, caplog):
    """Keys 1-300 loaded (P0), then all updated by three loads in cursor order (P1-P3): each update's history write
    replaces the keys' newest rows only (300), carrying along at most one file of other rows, as the closed rows
    lie in files of their own. Then a late load (P4, ten keys, a cursor between P1's and P2's) and a load run again
    (P2) recompute the touched keys' whole history. The tables equal all loads' history at once."""
    monkeypatch.setattr(delta, "KEY_ORDERED_FILE_ROWS", 100)
    caplog.set_level("INFO", logger="lakenorm")
    packages = [{"load_id": f"P{i}", "created_at": f"2024-01-0{i + 1}T00:00:00Z",
                 "records": [{"id": k, "v": f"v{seq}", "seq": seq} for k in range(1, 301 if i < 4 else 11)]}
                for i, seq in enumerate([0, 2, 4, 6, 3])]
    case = {**load_case("scd/cursor_order.json"), "packages": packages}
    plan, config = plan_of(case), case_config(tmp_path, case)
    path = config.table_path("src", f"{STREAM}_scd")
    commits = []
    for package in [*packages, packages[2]]:
        write_dedup_tables(spark, SourceTables.of(config, "src"), plan, raw_frame(spark, [package]),
                           [package["load_id"]])
        commits.append(DeltaTable.forPath(spark, path).history(1).first())
    for update in commits[1:4]:
        assert update["operationParameters"]["predicate"].endswith(" AND `_norm_valid_to` IS NULL")
        assert int(update["operationMetrics"]["numDeletedRows"]) == 300
        assert int(update["operationMetrics"]["numCopiedRows"]) <= 100
    assert [c["operationParameters"]["predicate"] for c in commits[4:]] == [
        "`id` BETWEEN 1 AND 10", "`id` BETWEEN 1 AND 300"]
    recomputed = [r.getMessage() for r in caplog.records if "history recomputed" in r.getMessage()]
    assert len(recomputed) == 2
    history = scd_history(parse_versions(raw_frame(spark, packages), N, plan.schema), N, plan)
    assert table_rows(read_table(spark, path)) == table_rows(history)
    assert read_table(spark, path).count() == 4 * 300 + 10


def test_a_load_in_cursor_order_bringing_a_new_column_adds_it_to_the_history(spark, tmp_path, load_case):
    """Keys 1 and 2 loaded, then key 1 updated by a load whose records carry a new field `w` (its catalog now
    declares it): the update replaces only the newest rows, and the history gains the column, NULL in older rows."""
    packages = [{"load_id": "P0", "created_at": "2024-01-01T00:00:00Z",
                 "records": [{"id": 1, "v": "a", "seq": 0}, {"id": 2, "v": "a", "seq": 0}]},
                {"load_id": "P1", "created_at": "2024-01-02T00:00:00Z",
                 "records": [{"id": 1, "v": "b", "seq": 1, "w": "x"}]}]
    case = {**load_case("scd/cursor_order.json"), "packages": packages}
    wider = {**case, "schema": {**case["schema"], "w": {"type": ["null", "string"]}}}
    config = case_config(tmp_path, case)
    for package, catalog in zip(packages, (case, wider)):
        write_dedup_tables(spark, SourceTables.of(config, "src"), plan_of(catalog), raw_frame(spark, [package]),
                           [package["load_id"]])
    path = config.table_path("src", f"{STREAM}_scd")
    commit = DeltaTable.forPath(spark, path).history(1).first()
    assert commit["operationParameters"]["predicate"].endswith(" AND `_norm_valid_to` IS NULL")
    rows = sorted((r["id"], r["v"], r["w"], r[N.is_current]) for r in read_table(spark, path).collect())
    assert rows == [(1, "a", None, False), (1, "b", "x", True), (2, "a", None, True)]


@pytest.mark.parametrize(("deletion_vectors", "merge_from_rows", "ratio", "operation"), [
    (False, 100, 100, "WRITE"), (True, 100_000, 100, "WRITE"), (True, 100, 1_000, "WRITE"), (True, 100, 100, "MERGE")])
def test_with_deletion_vectors_a_large_history_takes_an_update_by_merge_on_read(
        spark, tmp_path, load_case, monkeypatch, deletion_vectors, merge_from_rows, ratio, operation):
    """Keys 5, 505 and 995 and the NULL key (4 versions) updated in a history of 1,001 keys (11 files of at most 100
    rows): without deletion vectors, or with them below `MERGE_ON_READ_ROWS` or `MERGE_ON_READ_RATIO` times the
    versions, the keys' range is rewritten (copy on write, all 1,001 rows); with them from there on, a MERGE marks the
    4 replaced rows deleted and copies none (merge on read). Either way the tables equal all loads' history at once."""
    monkeypatch.setattr(delta, "KEY_ORDERED_FILE_ROWS", 100)
    monkeypatch.setattr(touched_keys, "MERGE_ON_READ_ROWS", merge_from_rows)
    monkeypatch.setattr(touched_keys, "MERGE_ON_READ_RATIO", ratio)
    paths = update_of_1000_keys(spark, tmp_path, load_case, [995, 5, None, 505], deletion_vectors=deletion_vectors)
    for path in paths:
        commit = DeltaTable.forPath(spark, path).history(1).first()
        metrics = commit["operationMetrics"]
        assert commit["operation"] == operation
        if operation == "WRITE":
            assert int(metrics["numOutputRows"]) > 900  # the range's rows (keys 5-995), all written again
        else:
            assert int(metrics["numTargetRowsCopied"]) == 0
            assert int(metrics["numTargetRowsUpdated"]) == 4  # history: the 4 closed versions; current: the 4 keys
            assert int(metrics["numTargetDeletionVectorsAdded"]) + int(
                metrics["numTargetDeletionVectorsUpdated"]) >= 1


@pytest.mark.parametrize(("values", "kind", "bounds"), [
    ([3, None, 1], "long", (1, 3, True)), (["b", "a"], "string", ("a", "b", False)),
    ([None], "long", (None, None, True))])
def test_the_touched_keys_bound_the_rows_that_can_hold_them(spark, values, kind, bounds):
    cols = ScdColumns(STREAM, ("id",), None, None, None, None)
    keys = spark.createDataFrame([(v,) for v in values], f"id {kind}")
    low, high, nulls = keys.agg(*key_bounds(keys, cols)).first()
    assert (low, high, nulls) == bounds
    table = spark.createDataFrame([(v,) for v in [*values, "z" if kind == "string" else 7]], f"id {kind}")
    near = table.where(KeyRange("id", low, high, nulls).rows()).collect()
    assert sorted(near, key=str) == sorted(keys.collect(), key=str)


def test_keys_of_a_type_without_a_safe_literal_have_no_range(spark):
    keys = spark.createDataFrame([("2024-01-01",)], "id string").select(F.to_timestamp("id").alias("id"))
    assert key_bounds(keys, ScdColumns(STREAM, ("id",), None, None, None, None)) is None
