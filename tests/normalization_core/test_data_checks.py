"""Data checks (SPEC §8) on hand-made Delta tables: each passes on good data and names the bad keys."""
from __future__ import annotations

import pytest

from normalization_core.checks import data_checks as K
from normalization_core.columns import NATIVE
from normalization_core.io.delta import read_table

CASE = "checks/tables.json"


@pytest.fixture
def delta_table(spark, tmp_path):
    """Writes rows (lists in DDL column order) as a Delta table and reads it back."""
    counter = iter(range(1000))

    def write(schema: str, rows: list[list]):
        path = str(tmp_path / f"t{next(counter)}")
        spark.createDataFrame([tuple(r) for r in rows], schema).write.format("delta").save(path)
        return read_table(spark, path)

    return write


def test_rows_typed_per_load_compares_valid_raw_lines_with_root_rows_of_the_given_loads(delta_table, load_case):
    case = load_case(CASE)["rows_typed"]
    raw = delta_table(case["raw"]["schema"], case["raw"]["rows"])
    root = delta_table(case["root"]["schema"], case["root"]["rows"])
    for expected in case["cases"]:
        outcome = K.rows_typed_per_load(raw, root, NATIVE, expected["load_ids"], expected.get("discarded_rows"))
        assert (outcome.passed, list(outcome.offending)) == (expected["passed"], expected["offending"]), expected
        discarded = {"discarded_rows": expected["discarded"]} if "discarded" in expected else {}
        assert outcome.counts == {"valid_raw_lines": expected["valid_raw_lines"], "typed_rows": expected["typed_rows"],
                                  **discarded}


def test_orphan_child_rows_are_named_by_their_row_keys(delta_table, load_case):
    case = load_case(CASE)["orphans"]
    parent = delta_table(case["parent"]["schema"], case["parent"]["rows"])
    child = delta_table(case["child"]["schema"], case["child"]["rows"])
    for expected in case["cases"]:
        outcome = K.orphan_child_rows(child, parent, NATIVE, "orders", "orders__items", expected["load_ids"])
        assert (outcome.passed, list(outcome.offending)) == (expected["passed"], expected["offending"]), expected
        assert outcome.failures == len(expected["offending"])


def test_per_load_checks_judge_each_load_of_a_run_alone(delta_table, load_case):
    """What one run over several loads reports for each load's partition: that load's outcome only."""
    rows, orphans = load_case(CASE)["rows_typed"], load_case(CASE)["orphans"]
    typed = K.rows_typed_by_load(delta_table(rows["raw"]["schema"], rows["raw"]["rows"]),
                                 delta_table(rows["root"]["schema"], rows["root"]["rows"]), NATIVE,
                                 rows["by_load"]["load_ids"])
    orphaned = K.orphan_child_rows_by_load(delta_table(orphans["child"]["schema"], orphans["child"]["rows"]),
                                           delta_table(orphans["parent"]["schema"], orphans["parent"]["rows"]),
                                           NATIVE, "orders", "orders__items", orphans["by_load"]["load_ids"])
    for case, outcomes in ((rows, typed), (orphans, orphaned)):
        assert {load: [o.passed, o.failures, list(o.offending)] for load, o in outcomes.items()} == \
            case["by_load"]["outcomes"]


def test_unique_primary_key_compares_columns_and_names_duplicated_keys(delta_table, load_case):
    case = load_case(CASE)["unique_key"]
    for expected in case["cases"]:
        outcome = K.unique_primary_key(delta_table(case["schema"], expected["rows"]), case["key"])
        assert (outcome.passed, list(outcome.offending)) == (expected["passed"], expected["offending"])


def test_valid_history_passes_both_history_checks(delta_table, load_case):
    case = load_case(CASE)["history"]
    history = delta_table(case["schema"], case["valid"]["rows"])
    current = delta_table(case["current_schema"], case["valid"]["current"])
    assert K.one_current_version(history, current, NATIVE, "customers") == K.CheckOutcome(True, 0)
    assert K.non_overlapping_validity(history, NATIVE) == K.CheckOutcome(True, 0)


def test_two_current_versions_or_a_current_table_out_of_step_name_the_keys(delta_table, load_case):
    case = load_case(CASE)["history"]
    history = delta_table(case["schema"], case["two_current"]["rows"])
    current = delta_table(case["current_schema"], case["two_current"]["current"])
    outcome = K.one_current_version(history, current, NATIVE, "customers")
    assert not outcome.passed
    assert list(outcome.offending) == case["two_current"]["offending"]


def test_overlapping_open_or_reversed_validity_intervals_name_the_keys(delta_table, load_case):
    case = load_case(CASE)["history"]
    outcome = K.non_overlapping_validity(delta_table(case["schema"], case["overlapping"]["rows"]), NATIVE)
    assert (outcome.passed, list(outcome.offending)) == (False, case["overlapping"]["offending"])


def test_offending_keys_are_capped_but_all_failures_are_counted(delta_table):
    rows = [[i, "eu", "a"] for i in range(30)] * 2
    outcome = K.unique_primary_key(delta_table("id bigint, region string, name string", rows), ["id", "region"])
    assert outcome.failures == 30
    assert len(outcome.offending) == K.MAX_OFFENDING
