"""Files still settling (SPEC §2.4), without Spark: which files wait, how many units they make, what is said."""
from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from normalization_core.configuration.config import parse_config
from normalization_core.inputs import source_input
from normalization_core.inputs.listing import FileEntry
from normalization_core.inputs.settling import settling_text, split_settled
from normalization_core.io.load_packages import Settling

CASES = json.loads((Path(__file__).parents[2] / "cases" / "inputs" / "settling_text.json").read_text())["cases"]


@pytest.mark.parametrize("case", CASES, ids=[c["text"] for c in CASES])
def test_what_is_said_of_settling_files(case):
    settling = Settling(case["files"], case["units"], datetime.fromisoformat(case["readable_at"]))
    assert settling_text(settling, datetime.fromisoformat(case["now"])) == case["text"]


def test_files_younger_than_settle_seconds_wait_and_a_future_time_waits_too():
    now = 1_000_000_000
    files = [FileEntry("old", 1, now - 60_000), FileEntry("young", 1, now - 59_999), FileEntry("future", 1, now + 5)]
    settled, settling = split_settled(files, 60, now)
    assert ([f.path for f in settled], [f.path for f in settling]) == (["old"], ["young", "future"])


def test_singer_files_still_written_are_counted_by_run_and_reported_with_their_readable_time(tmp_path):
    landing = tmp_path / "landing"
    (landing / "run 7").mkdir(parents=True)
    for name in ("run 7/part-1.jsonl", "run 7/part-2.jsonl.gz", "run-8.jsonl"):
        (landing / name).write_bytes(b"")  # just created: a half-written gzip file is not read to count it
    config = parse_config({"warehouse": "wh", "sources": [
        {"name": "shop", "landing": "landing", "input": "singer", "settle_seconds": 600}]}, base_dir=tmp_path)
    source = config.source("shop")
    found = source_input(source).discover(config, source)
    newest = max(p.stat().st_mtime for p in landing.rglob("*") if p.is_file())
    assert (found.packages, found.rejected) == ((), ())
    assert (found.settling.files, found.settling.units) == (3, 2)
    assert found.settling.readable_at.timestamp() == pytest.approx(newest + 600, abs=0.002)
