"""The local engine's authentication token: a client without it is refused by the engine (Spark Connect's
`spark.connect.authenticate.token`), lakenorm's clients present it.

`lakenorm engine start` makes a new random token per engine, unless the configuration's `spark.engine_token_env`
names an environment variable holding one (an engine whose clients are on other hosts, or a token kept in a
secret store). The server gets it through its environment, never its command line (which any local user can read);
the engine's folder keeps it in `engine.token`, readable by its user only, for the engine's own clients (the CLI,
Dagster runs, a notebook: `engine_session`). Neither the state file (`engine.json`) nor `engine status` holds it.
"""
from __future__ import annotations

import json
import os
import secrets
from collections.abc import Mapping
from pathlib import Path

from normalization_core.errors import LakenormError
from normalization_core.runtime.jars import PROJECT_ROOT

TOKEN_FILE = "engine.token"
ENGINE_DIR_ENV = "LAKENORM_ENGINE_DIR"
STATE_FILE = "engine.json"
"""The engine's record in its folder (pid, host, port, started), written by `runtime.engine.start`."""
_DEFAULT_PORT = "15002"
TOKEN_ENV_KEY = "engine_token_env"
"""The `spark:` key naming the environment variable that holds the engine's token (validated by the configuration)."""
SERVER_TOKEN_ENV = "SPARK_CONNECT_AUTHENTICATE_TOKEN"
"""Where a Spark Connect server reads its token when its settings name none (Spark 4's `Connect.getAuthenticateToken`);
pyspark's client sends the same variable's value when the address names no token."""
OWNER_ONLY = 0o600


def token_from_environment(spark_conf: Mapping[str, str]) -> str | None:
    """The token of the variable `spark.engine_token_env` names; None when the configuration names none."""
    name = spark_conf.get(TOKEN_ENV_KEY)
    if not name:
        return None
    value = os.environ.get(name, "").strip()
    if not value:
        raise LakenormError(f"spark.engine_token_env names the environment variable {name}, which is not set: set it "
                            "to the engine's token (the same value for the engine and its clients)")
    return value


def engine_token(spark_conf: Mapping[str, str]) -> str:
    """The token a new engine is started with: the configured variable's, else a new random one."""
    return token_from_environment(spark_conf) or secrets.token_urlsafe(32)


def keep_token(directory: Path, token: str) -> None:
    """`engine.token` in the engine's folder, readable and writable by its user only."""
    write_owner_only(directory / TOKEN_FILE, token)


def write_owner_only(path: Path, text: str) -> None:
    """`text` as the file `path`, readable and writable by its user only (created so: never readable by others)."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, OWNER_ONLY)
    try:
        os.fchmod(descriptor, OWNER_ONLY)  # (a file left by an earlier engine keeps its mode otherwise)
        os.write(descriptor, text.encode())
    finally:
        os.close(descriptor)


def kept_token(directory: Path) -> str | None:
    try:
        return (directory / TOKEN_FILE).read_text().strip() or None
    except OSError:
        return None


def engine_dir() -> Path:
    """`LAKENORM_ENGINE_DIR`, else `.lakenorm/engine` of the checkout lakenorm runs from (as `runtime.jars.jars_dir`),
    else of the working directory."""
    configured = os.environ.get(ENGINE_DIR_ENV)
    if configured:
        return Path(configured).resolve()
    base = PROJECT_ROOT if (PROJECT_ROOT / "pyproject.toml").is_file() else Path.cwd()
    return (base / ".lakenorm" / "engine").resolve()


def records_engine_at(remote: str, directory: Path) -> bool:
    """The engine recorded in `directory` listens at `remote` (`sc://host:port/...`); read from its record here,
    since the engine's modules import the session module, which imports this one."""
    try:
        state = json.loads((directory / STATE_FILE).read_text())
    except (OSError, ValueError):
        return False
    host, _, port = remote.split("://", 1)[-1].split("/", 1)[0].rpartition(":")
    recorded = state.get("host")
    same_host = host == recorded or {host, recorded} <= {"127.0.0.1", "localhost"}
    return same_host and (port or _DEFAULT_PORT) == str(state.get("port"))


def client_token(spark_conf: Mapping[str, str], directory: Path | None = None) -> str | None:
    """The token a client of `spark.remote` presents: the configured variable's, else the one kept by the local
    engine recorded at that address, else `SPARK_CONNECT_AUTHENTICATE_TOKEN`'s; None for any other remote (its own
    address may carry `;token=`)."""
    named = token_from_environment(spark_conf)
    if named:
        return named
    directory = directory or engine_dir()
    remote = spark_conf.get("remote")
    kept = kept_token(directory) if remote and records_engine_at(remote, directory) else None
    return kept or os.environ.get(SERVER_TOKEN_ENV) or None


LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})


def token_channel(remote: str, token: str):
    """Connect's channel to `remote` presenting `token`. pyspark's own sends a token over TLS only, or over a local
    channel to a host named `localhost`; the local engine listens on loopback without TLS: to a loopback host (by
    name or address) the token goes over gRPC's local channel (a connection that never leaves the machine), to any
    other host as pyspark sends it (TLS)."""
    import grpc
    from pyspark.sql.connect.client import DefaultChannelBuilder

    class TokenChannel(DefaultChannelBuilder):
        def toChannel(self):
            if self.use_ssl or self.host not in LOOPBACK_HOSTS:
                return super().toChannel()
            credentials = grpc.composite_channel_credentials(grpc.local_channel_credentials(),
                                                             grpc.access_token_call_credentials(self.token))
            return self._secure_channel(self.endpoint, credentials)

    channel = TokenChannel(remote)
    if channel.getDefault(DefaultChannelBuilder.PARAM_TOKEN, None) is None:  # (a `;token=` of the address wins)
        channel.set(DefaultChannelBuilder.PARAM_TOKEN, token)
    return channel
