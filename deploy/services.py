"""The one-machine stack's services, each a process of its own on loopback: a Spark standalone master and workers
(pyspark's own launcher, `spark-class`), PostgreSQL for the Dagster instance (the machine's `initdb`/`pg_ctl`),
an S3 server (moto), `dagster-daemon` and `dagster-webserver`. Used by `deploy/stack.py` and by the tests."""
from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyspark

from normalization_core.runtime.engine import free_port  # noqa: F401 (the services' ports too)
from normalization_core.runtime.jars import JARS_DIR_ENV, jars_dir

SPARK_HOME = Path(pyspark.__file__).parent
BIN = Path(sys.executable).parent
"""The venv's console scripts: dagster-daemon, dagster-webserver, moto_server."""
PG_USER = "postgres"
"""PostgreSQL refuses to run as root: as root, its commands run as this system user (Debian's package makes it)."""


def start(args: list[str], log: Path, env: Mapping[str, str] | None = None, cwd: Path | None = None
          ) -> subprocess.Popen:
    """A process in a session of its own (so that stopping it stops its children), output into `log`."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        return subprocess.Popen(args, env={**os.environ, **(env or {})}, cwd=cwd, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)


def wait_for_log(log: Path, text: str, process: subprocess.Popen | None = None, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.is_file() and text in log.read_text(errors="replace"):
            return
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"{log.name}: the process exited: {log.read_text(errors='replace')[-2000:]}")
        time.sleep(0.5)
    raise TimeoutError(f"{log.name}: no {text!r} after {timeout} s")


def wait_for_port(port: int, what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    raise TimeoutError(f"{what}: nothing listens on 127.0.0.1:{port} after {timeout} s")


def stop(pid: int, timeout: float = 30) -> None:
    """SIGTERM to the process group of `pid` (a process started by `start`), SIGKILL to what is left of it after
    `timeout`. The whole group: `dagster-daemon`'s code server outlived the daemon, still polling the database."""
    try:
        os.killpg(pid, 15)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(pid) and not group_alive(pid):
            return
        time.sleep(0.3)
    try:
        os.killpg(pid, 9)
    except ProcessLookupError:
        pass


def group_alive(pgid: int) -> bool:
    """Whether a process of the group is left (a zombie member counts until its parent reaps it)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def alive(pid: int) -> bool:
    try:
        waited, _ = os.waitpid(pid, os.WNOHANG)  # reaps our own child; others raise ChildProcessError
        if waited == pid:
            return False
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").is_file() and Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


# --- Spark standalone ------------------------------------------------------------------------------------------

def _spark_class(args: list[str], log: Path) -> subprocess.Popen:
    env = {"SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_NO_DAEMONIZE": "1"}
    return start([str(SPARK_HOME / "bin" / "spark-class"), *args], log, env)


def start_spark_master(folder: Path, port: int) -> subprocess.Popen:
    log = folder / "master.log"
    master = _spark_class(["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                           "--webui-port", str(free_port(8080))], log)
    wait_for_log(log, "I have been elected leader", master)
    return master


WORKER_REGISTERED = "Successfully registered with master"


def start_spark_worker(folder: Path, index: int, master_url: str, cores: int, memory: str,
                       wait: bool = True) -> subprocess.Popen:
    """A worker whose executors run in `<folder>/worker-<index>/<app id>/<executor id>` (`wait`: returns once it
    registered with the master, its log `<folder>/worker-<index>.log` saying so)."""
    work = folder / f"worker-{index}"
    work.mkdir(parents=True, exist_ok=True)
    log = folder / f"worker-{index}.log"
    worker = _spark_class(["org.apache.spark.deploy.worker.Worker", master_url, "--host", "127.0.0.1",
                           "--cores", str(cores), "--memory", memory, "--webui-port", str(free_port()),
                           "--work-dir", str(work)], log)
    if wait:
        wait_for_log(log, WORKER_REGISTERED, worker)
    return worker


@contextmanager
def standalone_cluster(folder: Path, workers: int = 2, cores: int = 1, memory: str = "1g") -> Iterator[str]:
    """Yields the master URL once every worker registered; stops the workers and the master after. The workers
    start side by side, and all stop at once (each JVM's start and stop is seconds of waiting)."""
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    master_url = f"spark://127.0.0.1:{port}"
    processes = []
    try:
        processes.append(start_spark_master(folder, port))
        started = [start_spark_worker(folder, i, master_url, cores, memory, wait=False) for i in range(workers)]
        processes.extend(started)
        for i, worker in enumerate(started):
            wait_for_log(folder / f"worker-{i}.log", WORKER_REGISTERED, worker)
        yield master_url
    finally:
        for process in reversed(processes):  # SIGTERM to every group first, then wait for each
            try:
                os.killpg(process.pid, 15)
            except ProcessLookupError:
                pass
        for process in reversed(processes):
            stop(process.pid)


def executor_dirs(folder: Path, worker: int) -> list[Path]:
    """The executors a worker ran so far (one folder each: `<app id>/<executor id>`)."""
    return sorted((folder / f"worker-{worker}").glob("app-*/*"))


# --- PostgreSQL ------------------------------------------------------------------------------------------------

def _as_pg_user(args: list[str]) -> list[str]:
    return ["runuser", "-u", PG_USER, "--", *args] if os.geteuid() == 0 else args


def _pg_bin(name: str) -> str:
    found = shutil.which(name) or next(iter(sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"))), None)
    if not found:
        raise RuntimeError(f"PostgreSQL's {name} is not installed (Debian: apt-get install postgresql)")
    return str(found)


@dataclass(frozen=True)
class Postgres:
    """A PostgreSQL cluster in a folder of its own, listening on 127.0.0.1:`port` only, trusting loopback."""

    folder: Path
    port: int
    database: str = "dagster"
    user: str = "dagster"

    @property
    def data(self) -> Path:
        return self.folder / "data"

    @property
    def url(self) -> str:
        return f"postgresql+psycopg2://{self.user}@127.0.0.1:{self.port}/{self.database}"

    def init(self) -> None:
        """`initdb` once (the data folder owned by the server's user), then the database on first start."""
        if (self.data / "PG_VERSION").is_file():
            return
        self.data.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            owner = pwd.getpwnam(PG_USER)
            for path in (self.folder, self.data):
                os.chown(path, owner.pw_uid, owner.pw_gid)
        subprocess.run(_as_pg_user([_pg_bin("initdb"), "-D", str(self.data), "-U", self.user, "--auth=trust",
                                    "-E", "UTF8", "--no-instructions"]), check=True, capture_output=True)

    def start(self) -> None:
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c fsync=off"
        subprocess.run(_as_pg_user([_pg_bin("pg_ctl"), "-D", str(self.data), "-l", str(self.data / "server.log"),
                                    "-o", options, "-w", "-t", "60", "start"]), check=True, capture_output=True)
        self.create_database(self.database)

    def create_database(self, name: str) -> None:
        """A database of the cluster, owned by its user (one that exists already is left as it is)."""
        created = subprocess.run([_pg_bin("createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", self.user,
                                  name], capture_output=True, text=True)
        if created.returncode != 0 and "already exists" not in created.stderr:
            raise RuntimeError(f"createdb {name}: {created.stderr.strip()}")

    def stop(self) -> None:
        if (self.data / "postmaster.pid").is_file():
            subprocess.run(_as_pg_user([_pg_bin("pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop"]),
                           capture_output=True)

    def running(self) -> bool:
        return subprocess.run(_as_pg_user([_pg_bin("pg_ctl"), "-D", str(self.data), "status"]),
                              capture_output=True).returncode == 0


@contextmanager
def postgres(folder: Path) -> Iterator[Postgres]:
    """A fresh cluster for a block (tests): started on a free port, stopped and removed after."""
    server = Postgres(folder, free_port())
    server.init()
    try:
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)


# --- S3 server, Dagster ----------------------------------------------------------------------------------------

def start_s3_server(port: int, log: Path) -> subprocess.Popen:
    """moto's S3 server (in memory: its buckets go when it stops)."""
    server = start([str(BIN / "moto_server"), "-H", "127.0.0.1", "-p", str(port)], log)
    wait_for_port(port, "moto_server")
    return server


def dagster_env(home: Path, config: Path, pg_url: str) -> dict[str, str]:
    """The environment of the daemon, the webserver and (inherited) every run they launch."""
    # The jar cache by absolute path: runs start in DAGSTER_HOME, where the default `.lakenorm/jars` is not.
    return {"DAGSTER_HOME": str(home), "LAKENORM_CONFIG": str(config), "LAKENORM_PG_URL": pg_url,
            "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable, JARS_DIR_ENV: str(jars_dir())}


def create_instance_tables(env: Mapping[str, str]) -> None:
    """The instance's tables, created before the daemon and the webserver start: two processes creating them at
    once on a fresh PostgreSQL fail (type "runs" already exists) and the loser exits."""
    subprocess.run([str(BIN / "dagster"), "instance", "migrate"], env={**os.environ, **env},
                   cwd=env["DAGSTER_HOME"], check=True, capture_output=True)


def start_dagster_daemon(workspace: Path, env: Mapping[str, str], log: Path) -> subprocess.Popen:
    return start([str(BIN / "dagster-daemon"), "run", "-w", str(workspace)], log, env, cwd=Path(env["DAGSTER_HOME"]))


def start_dagster_webserver(workspace: Path, env: Mapping[str, str], port: int, log: Path) -> subprocess.Popen:
    server = start([str(BIN / "dagster-webserver"), "-h", "127.0.0.1", "-p", str(port), "-w", str(workspace)],
                   log, env, cwd=Path(env["DAGSTER_HOME"]))
    wait_for_port(port, "dagster-webserver", timeout=180)
    return server
