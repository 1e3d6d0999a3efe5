"""A local warm engine: a Spark Connect server started in the background (`lakenorm engine start | status | stop`).

The server is pyspark's own `SparkConnectServer` (pyspark ships `jars/spark-connect_2.13-<version>.jar`),
started with `bin/spark-submit` of pyspark's SPARK_HOME, with Delta's jars from the project's cache and the
settings a local driver of lakenorm gets (`runtime.spark.session_conf`: Delta's extension and catalog, UTC, memory,
the class archive, errors-only logging). Clients reach it through `spark: {remote: "sc://host:port"}`.

Its state lives in one folder (`engine_dir`): `engine.json` (pid, host, port, started), `engine.log` (the
server's stdout and stderr), and, readable by its user only, `engine.token` (the token its clients present:
`runtime.engine_token`) and `engine.properties` (the settings that are secrets, such as S3 credentials, kept off the
server's command line, which any local user can read). The server runs in a process group of its own, so `stop`
ends it (and only it) by the recorded pid.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from pyspark.sql import SparkSession

from normalization_core.errors import LakenormError
from normalization_core.runtime.engine_token import (  # noqa: F401 (ENGINE_DIR_ENV, STATE_FILE: named here too)
    ENGINE_DIR_ENV,
    SERVER_TOKEN_ENV,
    STATE_FILE,
    engine_dir,
    engine_token,
    keep_token,
    kept_token,
    write_owner_only,
)
from normalization_core.runtime.spark import DEFAULT_CONNECT_PORT, REMOTE, connect_session, remote_address, session_conf

CONNECT_SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
LOG_FILE = "engine.log"
SECRET_SETTINGS_FILE = "engine.properties"
SECRET_SETTING_SUFFIXES = (".access.key", ".secret.key", ".session.token")
"""Settings whose values are credentials (Hadoop's `fs.s3a.*` keys): passed in `SECRET_SETTINGS_FILE`."""
DEFAULT_HOST = "127.0.0.1"
START_TIMEOUT_S = 180.0
STOP_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Engine:
    """A started server: its process and the address clients use."""

    pid: int
    host: str
    port: int
    started: float
    log: str
    conf: dict[str, str] = field(default_factory=dict)
    """The settings it was started with (`spark:` of the configuration): a recycled engine starts with them again."""

    @property
    def address(self) -> str:
        return f"sc://{self.host}:{self.port}"


@dataclass(frozen=True)
class EngineStatus:
    engine: Engine | None
    state: str
    """"running" (the port answers), "starting" (the process lives, the port does not answer yet), "stopped"."""

    def text(self) -> str:
        if self.engine is None or self.state == "stopped":
            return "engine: not running"
        e = self.engine
        return f"engine: {self.state} at {e.address} (pid {e.pid}, log {e.log})"


def spark_home() -> Path:
    """pyspark's own SPARK_HOME (the installed package), which ships the Connect server's jar."""
    import pyspark

    home = Path(pyspark.__file__).resolve().parent
    if not (home / "bin" / "spark-submit").is_file():
        raise LakenormError(f"pyspark at {home} ships no bin/spark-submit: cannot start a Spark Connect server")
    if not list((home / "jars").glob("spark-connect_*.jar")):
        raise LakenormError(f"pyspark at {home} ships no jars/spark-connect_*.jar: cannot start a Spark Connect server")
    return home


def server_conf(spark_conf: Mapping[str, str], host: str, port: int) -> dict[str, str]:
    """The server's Spark settings: a local lakenorm driver's (`session_conf`: Delta's jars, extension and
    catalog, UTC, memory, JVM options) with Connect's binding."""
    conf = session_conf({k: v for k, v in spark_conf.items() if k != REMOTE})
    conf["spark.app.name"] = "lakenorm-engine"
    conf["spark.connect.grpc.binding.address"] = host
    conf["spark.connect.grpc.binding.port"] = str(port)
    return conf


def server_command(conf: Mapping[str, str], secrets_file: Path | None = None) -> list[str]:
    """`spark-submit --class SparkConnectServer` (a class spark-submit runs without an application jar); the
    settings that are secrets only in `secrets_file` (`keep_secret_settings`), never on the command line."""
    settings = {k: v for k, v in conf.items() if not is_secret_setting(k)}
    master = settings.pop("spark.master", "local[2]")
    command = [str(spark_home() / "bin" / "spark-submit"), "--master", master, "--class", CONNECT_SERVER_CLASS]
    if secrets_file is not None:
        command += ["--properties-file", str(secrets_file)]
    for key, value in settings.items():
        command += ["--conf", f"{key}={value}"]
    return command


def is_secret_setting(key: str) -> bool:
    return key.endswith(SECRET_SETTING_SUFFIXES)


def keep_secret_settings(conf: Mapping[str, str], directory: Path) -> Path:
    """The settings of `conf` that are secrets, as a Spark properties file readable by its user only."""
    path = directory / SECRET_SETTINGS_FILE
    write_owner_only(path, "".join(f"{key} {value}\n" for key, value in conf.items() if is_secret_setting(key)))
    return path


def free_port(preferred: int | None = None) -> int:
    """`preferred` when nothing listens there, else a free port the kernel picks."""
    for port in ([preferred] if preferred else []) + [0]:
        with socket.socket() as probe:
            try:
                probe.bind((DEFAULT_HOST, port))
            except OSError:
                continue
            return probe.getsockname()[1]
    raise LakenormError(f"no free port on {DEFAULT_HOST}")


def answers(host: str, port: int, timeout: float = 1.0) -> bool:
    try:
        socket.create_connection((host, port), timeout=timeout).close()
        return True
    except OSError:
        return False


def _alive(pid: int) -> bool:
    """The process lives and is a Connect server (a recycled pid of another program is not ours)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False
    cmdline = Path(f"/proc/{pid}/cmdline")
    if cmdline.exists():
        try:
            return CONNECT_SERVER_CLASS.encode() in cmdline.read_bytes()
        except OSError:
            return False
    return True


def recorded(directory: Path | None = None) -> Engine | None:
    state = (directory or engine_dir()) / STATE_FILE
    try:
        return Engine(**json.loads(state.read_text()))
    except (OSError, ValueError, TypeError):
        return None


def status(directory: Path | None = None) -> EngineStatus:
    engine = recorded(directory)
    if engine is None or not _alive(engine.pid):
        return EngineStatus(engine, "stopped")
    return EngineStatus(engine, "running" if answers(engine.host, engine.port) else "starting")


def start(spark_conf: Mapping[str, str] | None = None, host: str = DEFAULT_HOST, port: int = DEFAULT_CONNECT_PORT,
          directory: Path | None = None, timeout: float = START_TIMEOUT_S, token: str | None = None) -> Engine:
    """Start the server in the background and return once its port answers; an engine this folder already
    records as running is returned as it is. Its clients must present `token` (default: `engine_token`), kept in
    the folder's `engine.token`."""
    directory = directory or engine_dir()
    current = status(directory)
    if current.engine is not None and current.state != "stopped":
        return _wait(current.engine, timeout)
    if answers(host, port):
        raise LakenormError(f"something else already listens on {host}:{port}: choose another port (--port) or "
                            "stop it")
    directory.mkdir(parents=True, exist_ok=True)
    conf = server_conf(spark_conf or {"master": "local[2]"}, host, port)
    command = server_command(conf, keep_secret_settings(conf, directory))
    token = token or engine_token(spark_conf or {})
    keep_token(directory, token)
    log = directory / LOG_FILE
    env = {**os.environ, "SPARK_HOME": str(spark_home()), "PYSPARK_PYTHON": sys.executable,
           "SPARK_LOG_DIR": str(directory), "SPARK_PID_DIR": str(directory), SERVER_TOKEN_ENV: token}
    env.pop("SPARK_REMOTE", None)
    env.pop("SPARK_CONNECT_MODE_ENABLED", None)
    with open(log, "ab") as out:
        # its own session (process group): a terminal's Ctrl-C does not reach it, and `stop` ends exactly it.
        # spark-submit execs spark-class, which execs java: the pid is the server JVM's.
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                   env=env, cwd=directory, start_new_session=True)
    engine = Engine(pid=process.pid, host=host, port=port, started=time.time(), log=str(log),
                    conf=dict(spark_conf or {}))
    (directory / STATE_FILE).write_text(json.dumps(asdict(engine)))
    try:
        return _wait(engine, timeout, process)
    except LakenormError:
        _terminate(engine.pid)
        raise


def restart(engine: Engine, directory: Path | None = None, timeout: float = START_TIMEOUT_S) -> Engine:
    """Stop the engine and start it again with its settings and token, at its address."""
    token = kept_token(directory or engine_dir())
    stop(directory)
    return start(engine.conf or None, host=engine.host, port=engine.port, directory=directory, timeout=timeout,
                 token=token)


def rss_bytes(pid: int) -> int | None:
    """The resident memory of the process (the server JVM), None when it cannot be read."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _wait(engine: Engine, timeout: float, process: subprocess.Popen | None = None) -> Engine:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if answers(engine.host, engine.port):
            return engine
        exited = process.poll() is not None if process is not None else not _alive(engine.pid)
        if exited:
            raise LakenormError(f"the engine exited while starting: {_last_lines(Path(engine.log))} "
                                f"(log: {engine.log})")
        time.sleep(0.25)
    raise LakenormError(f"the engine did not answer at {engine.address} within {timeout:g} s (log: {engine.log})")


def _last_lines(log: Path, count: int = 3) -> str:
    try:
        lines = [line.strip() for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "(no log)"
    return " | ".join(lines[-count:])[:600] or "(empty log)"


def stop(directory: Path | None = None, timeout: float = STOP_TIMEOUT_S) -> Engine | None:
    """Stop the recorded engine (SIGTERM to its process group, SIGKILL after `timeout`); the engine stopped,
    None when none ran."""
    directory = directory or engine_dir()
    engine = recorded(directory)
    if engine is None:
        return None
    running = _alive(engine.pid)
    if running:
        _terminate(engine.pid, timeout)
        _until_closed(engine.host, engine.port, timeout)
    (directory / STATE_FILE).unlink(missing_ok=True)
    return engine if running else None


def _until_closed(host: str, port: int, timeout: float) -> None:
    """Wait until the port no longer answers: a JVM's leader thread is a zombie before its last threads (the
    gRPC server's) end, and a new engine on the same port is refused while they listen."""
    deadline = time.monotonic() + timeout
    while answers(host, port, timeout=0.5) and time.monotonic() < deadline:
        time.sleep(0.2)


def _terminate(pid: int, timeout: float = STOP_TIMEOUT_S) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, sig)  # the group the server leads (start_new_session)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if _reaped(pid):
                return
            time.sleep(0.2)


def _reaped(pid: int) -> bool:
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)  # our own child (started in this process): reap it
        if done:
            return True
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return Path(f"/proc/{pid}/stat").exists() and " Z " in Path(f"/proc/{pid}/stat").read_text()


def engine_session(directory: Path | None = None, spark_conf: Mapping[str, str] | None = None) -> SparkSession:
    """A Spark Connect session of the engine recorded in `directory` (default `engine_dir()`), presenting its token:
    a notebook's or a script's, beside lakenorm's runs (`spark_conf`: session settings `spark.*` to send)."""
    directory = directory or engine_dir()
    running = recorded(directory)
    if running is None or status(directory).state == "stopped":
        raise LakenormError(f"no engine runs from {directory}: start it with `lakenorm engine start` (or set "
                            f"{ENGINE_DIR_ENV} to the folder of the one that runs)")
    return connect_session({**(spark_conf or {}), REMOTE: running.address}, engine_directory=directory)


def engine_address(spark_conf: Mapping[str, str]) -> tuple[str, int]:
    """Where `lakenorm engine start` listens for a configuration: its `remote`'s host and port, else
    127.0.0.1:15002."""
    remote = spark_conf.get(REMOTE)
    return remote_address(remote) if remote else (DEFAULT_HOST, DEFAULT_CONNECT_PORT)
