"""The local engine's authentication token: a client without it is refused by the engine (Spark Connect's
`spark.connect.authenticate.token`), lakenorm's clients present it.

`lakenorm engine start` makes a new random token per engine, unless the configuration's `spark.engine_token_env`
names an environment variable holding one (an engine whose clients are on other hosts, or a token kept in a
secret store). The server gets it through its environment, never its command line (which any local user can read);
the engine's folder keeps it in `engine.token`, readable by its user only, for the engine's own clients (the CLI,
Dagster runs, a notebook: `engine_session`). Neither the state file (`engine.json`) nor `engine status` holds it.
"""
from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from pathlib import Path

from normalization_core.errors import LakenormError

TOKEN_FILE = "engine.token"
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


def client_token(spark_conf: Mapping[str, str], directory: Path | None = None) -> str | None:
    """The token a client of `spark.remote` presents: the configured variable's, else the one kept by the local
    engine recorded at that address, else `SPARK_CONNECT_AUTHENTICATE_TOKEN`'s; None for any other remote (its own
    address may carry `;token=`)."""
    from normalization_core.runtime.engine import engine_dir  # (these import the session module, which imports
    from normalization_core.runtime.engine_runs import local_engine  # this one)

    named = token_from_environment(spark_conf)
    if named:
        return named
    directory = directory or engine_dir()
    kept = kept_token(directory) if local_engine(spark_conf, directory) is not None else None
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
