"""The benchmark's phase table reads Spark's event log: each job goes to the table it writes, the read pass or the
driver's time alone. Case: tests/cases/bench/phase_events.jsonl, the event log of one session (`--floor`, 400
orders: a bare copy, the floor, then lakenorm), each event cut to the fields the table reads, `--out` as `/bench`."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

from phases import DRIVER, READ_PASS, WHOLE, Run, events, phases, table  # noqa: E402  (a script folder)

from tests.conftest import CASES  # noqa: E402

LOG = CASES / "bench" / "phase_events.jsonl"
OUT = Path("/bench")
RUNS = [Run("floor", 1796686317000, 1796686361000, OUT / "floor", OUT / "landing"),
        Run("lakenorm", 1796686361000, 1796686420000, OUT / "warehouse" / "shop", OUT / "landing")]
TABLES = {"_norm_raw_orders", "orders", "orders__line_items", "orders__line_items__discounts", "orders__tags"}


@pytest.fixture(scope="module")
def per_run():
    return phases(events(LOG), RUNS)


def test_each_job_goes_to_the_table_it_writes_or_to_the_read_pass(per_run) -> None:
    assert set(per_run["floor"]) == {READ_PASS, *TABLES, DRIVER, WHOLE}
    assert set(per_run["lakenorm"]) == {READ_PASS, *TABLES, "_norm_loads", "_norm_versions", DRIVER, WHOLE}
    assert {name: p.jobs for name, p in per_run["floor"].items() if name not in (DRIVER, WHOLE)} == {
        READ_PASS: 3, **{t: 2 for t in TABLES}}
    assert per_run["lakenorm"][READ_PASS].jobs == 1  # the counters, which fill the cached lines
    assert (per_run["floor"][WHOLE].jobs, per_run["lakenorm"][WHOLE].jobs) == (13, 15)


def test_task_seconds_add_up_to_the_runs_tasks(per_run) -> None:
    jobs_of_stage, job_times = {}, {}
    for event in events(LOG):
        if event["Event"] == "SparkListenerJobStart":
            jobs_of_stage.update({stage: event["Job ID"] for stage in event["Stage IDs"]})
            job_times[event["Job ID"]] = event["Submission Time"]
    in_runs = {run.name: 0 for run in RUNS}
    for event in events(LOG):
        if event["Event"] == "SparkListenerTaskEnd":
            submitted = job_times[jobs_of_stage[event["Stage ID"]]]
            run = next((r for r in RUNS if r.start_ms <= submitted <= r.end_ms), None)
            if run is not None:
                in_runs[run.name] += event["Task Metrics"]["Executor Run Time"]
    for run in RUNS:
        phases_of = per_run[run.name]
        assert phases_of[WHOLE].task_ms == in_runs[run.name] > 0
        assert sum(p.task_ms for name, p in phases_of.items() if name != WHOLE) == in_runs[run.name]


def test_wall_seconds_count_overlapping_jobs_once(per_run) -> None:
    lakenorm = per_run["lakenorm"]
    tables = [lakenorm[t].wall_seconds for t in TABLES]
    assert sum(tables) > lakenorm[WHOLE].wall_seconds  # the typed tables were written side by side
    assert lakenorm[WHOLE].wall_seconds + lakenorm[DRIVER].wall_seconds == pytest.approx(59.0)  # the run's window
    assert max(tables) <= lakenorm[WHOLE].wall_seconds


def test_the_table_shows_each_phase_of_both_runs_side_by_side(per_run) -> None:
    lines = table(per_run, (READ_PASS, "orders"))
    assert lines[0].split(" | ")[:3] == ["| phase", "floor task s", "floor wall s"]
    rows = {line.split(" | ")[0].removeprefix("| "): line.split(" | ")[1:] for line in lines[2:]}
    assert list(rows)[:2] == [READ_PASS, "orders"] and list(rows)[-2:] == [DRIVER, WHOLE]
    floor, lakenorm = per_run["floor"]["orders"], per_run["lakenorm"]["orders"]
    assert rows["orders"][:4] == [f"{floor.task_seconds:.1f}", f"{floor.wall_seconds:.1f}",
                                  f"{lakenorm.task_seconds:.1f}", f"{lakenorm.wall_seconds:.1f}"]
    assert rows["orders"][4] == f"{lakenorm.task_seconds / floor.task_seconds:.2f}x"
    assert rows["_norm_loads"][:2] == ["-", "-"]  # the floor keeps no registry
