"""Running the peers (`peer_dlt.py`, `peer_duckdb.py`) as whole processes on the same landing folder."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent


def timed_process(args: list[str]) -> tuple[float, str]:
    """Wall seconds of a whole process (start-up included) and what it printed; a failure stops the benchmark."""
    started = time.monotonic()
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return seconds, done.stdout


def run_peer(script: str, landing: Path, target: Path, *options: str) -> tuple[float, dict]:
    """Seconds of the peer's whole process and the JSON line it printed last (rows per table, phases)."""
    shutil.rmtree(target, ignore_errors=True)
    seconds, printed = timed_process([sys.executable, str(BENCH / script), str(landing), str(target), *options])
    return seconds, json.loads(printed.strip().splitlines()[-1])
