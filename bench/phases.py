"""Where a run's executor time goes, per phase, read from the Spark event log of the session that ran it.

Every Spark job is given to the table its SQL execution writes (the Delta path named in the plan of the job's
root execution), else to the read pass (jobs that read the landing files: the lines read, parsed and cached,
lakenorm's counters), else to "other" (planning, log replays). Per phase: the executors' task seconds (the sum of
the tasks' "Executor Run Time") and the wall seconds during which at least one of its jobs ran (phases overlap
when tables are written side by side, so the walls add up to more than the run's). Runs of one session are told
apart by when their jobs were submitted.

Reads only what Spark writes itself (`spark.eventLog.enabled`), so it works as well for a client of an engine.
"""
from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

READ_PASS, OTHER, DRIVER, WHOLE = "read pass", "other", "no job running", "whole run"
EVENT_LOG_CONF = {"spark.eventLog.enabled": "true", "spark.eventLog.compress": "false"}
"""Settings that make a session write its event log (with `spark.eventLog.dir`)."""


@dataclass
class Phase:
    task_ms: int = 0
    intervals: list[tuple[int, int]] = field(default_factory=list)
    jobs: int = 0

    @property
    def task_seconds(self) -> float:
        return self.task_ms / 1000

    @property
    def wall_seconds(self) -> float:
        """Seconds during which at least one of the phase's jobs ran."""
        return sum(stop - start for start, stop in _union(self.intervals)) / 1000


def _union(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, stop in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(stop, merged[-1][1]))
        else:
            merged.append((start, stop))
    return merged


def _gaps(intervals: list[tuple[int, int]], start: int, end: int) -> list[tuple[int, int]]:
    """The parts of [start, end] that no interval covers."""
    gaps, at = [], start
    for begin, stop in _union(intervals):
        if begin > at:
            gaps.append((at, min(begin, end)))
        at = max(at, stop)
    return gaps + ([(at, end)] if at < end else [])


@dataclass(frozen=True)
class Run:
    """One run of the session: its jobs were submitted between `start_ms` and `end_ms` (epoch ms), and its
    tables are under `tables` (a folder per table)."""

    name: str
    start_ms: int
    end_ms: int
    tables: Path
    landing: Path


def events(event_log: Path) -> Iterator[dict]:
    """The events of a session's log: a file, or Spark 4's folder of rolled files (`events_<n>_<app>`)."""
    files = [event_log] if event_log.is_file() else sorted(
        event_log.rglob("events_*"), key=lambda p: int(re.match(r"events_(\d+)", p.name).group(1)))
    for path in files:
        with path.open(encoding="utf-8") as lines:
            for line in lines:
                if line.strip():
                    yield json.loads(line)


def phases(log: Iterable[dict], runs: list[Run]) -> dict[str, dict[str, Phase]]:
    """Per run, per phase (a table's name, `READ_PASS`, `OTHER`, `DRIVER`: the run's seconds while none of its jobs
    ran, the driver planning and committing alone; and `WHOLE` for all its jobs)."""
    plans: dict[int, str] = {}
    roots: dict[int, int] = {}
    job_phase: dict[int, tuple[str, str]] = {}
    stage_job: dict[int, int] = {}
    result: dict[str, dict[str, Phase]] = {r.name: defaultdict(Phase) for r in runs}
    starts: dict[int, int] = {}
    for event in log:
        kind = event["Event"]
        if kind.endswith("SparkListenerSQLExecutionStart"):
            execution = event["executionId"]
            plans[execution] = event.get("physicalPlanDescription", "") + event.get("description", "")
            roots[execution] = event.get("rootExecutionId", execution)
        elif kind == "SparkListenerJobStart":
            run = next((r for r in runs if r.start_ms <= event["Submission Time"] <= r.end_ms), None)
            if run is None:
                continue
            execution = event.get("Properties", {}).get("spark.sql.execution.id")
            plan = plans.get(roots.get(int(execution), int(execution)), "") if execution else ""
            job_phase[event["Job ID"]] = (run.name, _phase_of(plan, run))
            starts[event["Job ID"]] = event["Submission Time"]
            for stage in event["Stage IDs"]:
                stage_job[stage] = event["Job ID"]
        elif kind == "SparkListenerJobEnd" and event["Job ID"] in job_phase:
            run_name, phase = job_phase[event["Job ID"]]
            interval = (starts[event["Job ID"]], event["Completion Time"])
            for name in (phase, WHOLE):
                result[run_name][name].intervals.append(interval)
                result[run_name][name].jobs += 1
        elif kind == "SparkListenerTaskEnd" and stage_job.get(event["Stage ID"]) in job_phase:
            run_name, phase = job_phase[stage_job[event["Stage ID"]]]
            run_ms = (event.get("Task Metrics") or {}).get("Executor Run Time", 0)
            for name in (phase, WHOLE):
                result[run_name][name].task_ms += run_ms
    for run in runs:
        whole = result[run.name][WHOLE]
        result[run.name][DRIVER] = Phase(0, _gaps(whole.intervals, run.start_ms, run.end_ms))
    return {name: dict(per_phase) for name, per_phase in result.items()}


def _phase_of(plan: str, run: Run) -> str:
    """The table under `run.tables` that the plan names first, else the read pass if it reads the landing."""
    found = re.search(re.escape(str(run.tables)) + r"/([^/\s,)\]`'\"]+)", plan)
    if found:
        return found.group(1)
    return READ_PASS if str(run.landing) in plan else OTHER


def table(per_run: dict[str, dict[str, Phase]], order: Iterable[str] = ()) -> list[str]:
    """Markdown rows: per phase, each run's task seconds and wall seconds side by side, and their ratios to the
    first run's (phases in `order` first, then the rest by name, `WHOLE` last)."""
    names = list(per_run)
    seen = {p for phases_of in per_run.values() for p in phases_of}
    rows = [p for p in order if p in seen] + sorted(seen - set(order) - {DRIVER, WHOLE}) + [DRIVER, WHOLE]
    header = " | ".join(f"{n} task s | {n} wall s" for n in names)
    ratios = " | ".join(f"{n} / {names[0]} task | {n} / {names[0]} wall" for n in names[1:])
    lines = [f"| phase | {header} | {ratios} |" if ratios else f"| phase | {header} |",
             "|" + "---|" * (1 + 2 * len(names) + 2 * (len(names) - 1))]
    for phase in rows:
        cells = []
        for n in names:
            p = per_run[n].get(phase)
            cells += ["-", "-"] if p is None else [f"{p.task_seconds:.1f}", f"{p.wall_seconds:.1f}"]
        first = per_run[names[0]].get(phase, Phase())
        for n in names[1:]:
            p = per_run[n].get(phase, Phase())
            cells += [_ratio(p.task_seconds, first.task_seconds), _ratio(p.wall_seconds, first.wall_seconds)]
        lines.append(f"| {phase} | " + " | ".join(cells) + " |")
    return lines


def _ratio(value: float, base: float) -> str:
    return f"{value / base:.2f}x" if value and base else "-"
