"""A Spark standalone master and workers on loopback, started from pyspark's own launcher (`spark-class`)."""
from __future__ import annotations

import os
import socket
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

import pyspark

SPARK_HOME = Path(pyspark.__file__).parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _start(args: list[str], log: Path) -> subprocess.Popen:
    env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_NO_DAEMONIZE": "1"}
    with log.open("wb") as out:
        return subprocess.Popen([str(SPARK_HOME / "bin" / "spark-class"), *args], env=env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)


def _wait_for(log: Path, text: str, process: subprocess.Popen, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in log.read_text(errors="replace"):
            return
        if process.poll() is not None:
            raise RuntimeError(f"{log.name} exited: {log.read_text(errors='replace')[-2000:]}")
        time.sleep(0.5)
    raise TimeoutError(f"{log.name}: no {text!r} after {timeout} s")


@contextmanager
def standalone_cluster(folder: Path, workers: int = 2, cores: int = 1, memory: str = "1g"):
    """Yields the master URL once every worker registered; stops the workers and the master after."""
    port = free_port()
    master_url = f"spark://127.0.0.1:{port}"
    processes = []
    folder.mkdir(parents=True, exist_ok=True)
    try:
        master_log = folder / "master.log"
        processes.append(_start(["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port",
                                 str(port), "--webui-port", str(free_port())], master_log))
        _wait_for(master_log, "I have been elected leader", processes[0])
        for i in range(workers):
            work = folder / f"worker-{i}"
            work.mkdir(parents=True, exist_ok=True)
            processes.append(_start(["org.apache.spark.deploy.worker.Worker", master_url, "--host", "127.0.0.1",
                                     "--cores", str(cores), "--memory", memory, "--webui-port", str(free_port()),
                                     "--work-dir", str(work)], folder / f"worker-{i}.log"))
        for i in range(workers):
            _wait_for(folder / f"worker-{i}.log", "Successfully registered with master", processes[i + 1])
        yield master_url
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
