"""Runs through the local engine (`lakenorm engine start`): each holds a lease while it runs, is counted, and
finds an engine that is healthy and within its limits; a run that loses its engine fails with one line.

A run (`lakenorm normalize`, a Dagster step) whose `spark.remote` is the engine recorded in `engine_dir` enters
`serving` before its session: it holds a shared lock on `runs.lock` until it ends (the operating system drops it
with the process) and appends a line to `runs.log`. Before taking its lease it tries the lock exclusively: when
that succeeds no other run is under way, and an engine that is down (its process gone: killed, crashed), has
served `engine_max_runs` runs, or whose server holds more than `engine_max_memory`, is restarted with its own
settings. The engine is so recycled between runs, never inside one. An engine elsewhere (a cluster's, a
Databricks endpoint) is only reached: nothing here starts, counts or recycles it.
"""
from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from normalization_core.errors import LakenormError
from normalization_core.runtime import engine as engines
from normalization_core.runtime.engine_token import records_engine_at
from normalization_core.runtime.settings import byte_size
from normalization_core.runtime.spark import REMOTE, remote_address, shown_remote

ENGINE_MAX_RUNS, ENGINE_MAX_MEMORY = "engine_max_runs", "engine_max_memory"
"""The `spark:` keys of the local engine's recycling limits (validated by the configuration)."""
RUNS_LOCK = "runs.lock"
RUNS_LOG = "runs.log"
DEFAULT_MAX_RUNS = 200
"""Runs an engine serves before it is restarted (between runs), unless `spark.engine_max_runs` says otherwise."""


def local_engine(spark_conf: Mapping[str, str], directory: Path | None = None) -> engines.Engine | None:
    """The engine recorded in `directory` when `spark.remote` names its address; None for any other remote."""
    remote, directory = spark_conf.get(REMOTE), directory or engines.engine_dir()
    return engines.recorded(directory) if remote and records_engine_at(remote, directory) else None


def runs_served(directory: Path) -> int:
    try:
        with open(directory / RUNS_LOG, "rb") as runs:
            return sum(1 for _ in runs)
    except FileNotFoundError:
        return 0


def recycle_reason(engine: engines.Engine, spark_conf: Mapping[str, str], directory: Path) -> str | None:
    """Why the engine should be restarted before the next run (down, too many runs, too much memory); None."""
    if engines.status(directory).state == "stopped":
        return "its server is down"
    served, limit = runs_served(directory), int(spark_conf.get(ENGINE_MAX_RUNS, DEFAULT_MAX_RUNS))
    if served >= limit:
        return f"it served {served} runs (engine_max_runs {limit})"
    ceiling = spark_conf.get(ENGINE_MAX_MEMORY)
    rss = engines.rss_bytes(engine.pid)
    if ceiling and rss is not None and rss > byte_size(ceiling):
        return f"its server holds {rss >> 20} MiB (engine_max_memory {ceiling})"
    return None


@contextmanager
def serving(spark_conf: Mapping[str, str], directory: Path | None = None,
            on_recycle=None) -> Iterator[engines.Engine | None]:
    """The block of one run through `spark.remote`: the local engine recycled first if it is due and idle, the
    run's lease held and counted, and an engine lost during the block made one `LakenormError`. `on_recycle`:
    called with the reason when the engine is restarted (a message for the run's log)."""
    remote = spark_conf.get(REMOTE)
    if not remote:
        yield None
        return
    directory = directory or engines.engine_dir()
    engine = local_engine(spark_conf, directory)
    if engine is None:
        with lost_engine_errors(remote):
            yield None
        return
    with open(directory / RUNS_LOCK, "a+b") as lock:
        engine = _recycled_if_due(lock, engine, spark_conf, directory, on_recycle)
        fcntl.flock(lock, fcntl.LOCK_SH)  # the lease (waits while another run recycles the engine)
        with open(directory / RUNS_LOG, "ab") as runs:  # (one short append: whole lines side by side)
            runs.write(json.dumps({"pid": os.getpid(), "at": time.time(), "host": socket.gethostname()}).encode()
                       + b"\n")
        with lost_engine_errors(remote):
            yield engine


def _recycled_if_due(lock: IO[bytes], engine: engines.Engine, spark_conf: Mapping[str, str], directory: Path,
                     on_recycle) -> engines.Engine:
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return engine  # runs are under way: the engine is not restarted under them
    try:
        reason = recycle_reason(engine, spark_conf, directory)
        if reason is None:
            return engine
        if on_recycle is not None:
            on_recycle(f"restarting the engine at {engine.address}: {reason}")
        restarted = engines.restart(engine, directory)
        (directory / RUNS_LOG).unlink(missing_ok=True)
        return restarted
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)


@contextmanager
def lost_engine_errors(remote: str | None) -> Iterator[None]:
    """An error raised while the engine at `remote` no longer answers: one line naming it and the way back
    (None: no engine, nothing changes)."""
    try:
        yield
    except LakenormError:
        raise
    except Exception as err:
        if not remote:
            raise
        host, port = remote_address(remote)
        if engines.answers(host, port):
            raise
        cause = (str(err).strip().splitlines() or [type(err).__name__])[0][:200]
        raise LakenormError(f"lost the Spark Connect engine at {shown_remote(remote)} during the run ({cause}): start it again "
                            "with `lakenorm engine start`, then run again (a load not yet registered is normalized "
                            "again, once)") from None
