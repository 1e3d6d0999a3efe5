"""The engine lets in only clients that present its token (runtime/engine_token.py): a bare Spark Connect client that
knows the address is refused, lakenorm's clients (a session from the configuration, `engine_session`) get in; the
token is kept readable by the engine's user only and shown nowhere else.

Each client runs in a process of its own (pyspark builds a process's columns for classic Spark or for Spark Connect)."""
from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from lakenorm_app.samples import write_catalog
from normalization_core.configuration.config import parse_config
from normalization_core.errors import ConfigError, LakenormError
from normalization_core.runtime import engine
from normalization_core.runtime.engine_token import (
    SERVER_TOKEN_ENV,
    TOKEN_FILE,
    client_token,
    engine_token,
    kept_token,
)

ROOT = Path(__file__).resolve().parents[3]
BARE_CLIENT = """
import sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
print(spark.range(3).count())
"""
LAKENORM_CLIENT = """
import sys
from normalization_core.api import build_spark_session, engine_session
print(build_spark_session({"master": "local[2]", "remote": sys.argv[1]}).range(3).count())
print(engine_session().range(4).count())
"""


def client(code: str, address: str, engine_dir: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in (SERVER_TOKEN_ENV, engine.ENGINE_DIR_ENV)}
    env["PYTHONPATH"] = str(ROOT)
    if engine_dir is not None:
        env[engine.ENGINE_DIR_ENV] = str(engine_dir)
    return subprocess.run([sys.executable, "-c", code, address], capture_output=True, text=True, timeout=300,
                          env=env, cwd=ROOT)


@pytest.mark.slow
def test_a_bare_client_is_refused_and_lakenorms_clients_get_in(shared_engine, tmp_path):
    bare = client(BARE_CLIENT, shared_engine.address, tmp_path)  # (an engine folder without the token)
    assert bare.returncode != 0 and "No authentication token provided" in bare.stderr, bare.stderr[-3000:]
    port = shared_engine.address.rsplit(":", 1)[1]
    guessed = client(BARE_CLIENT, f"sc://localhost:{port}/;token=guessed", tmp_path)
    assert guessed.returncode != 0 and "Invalid authentication token" in guessed.stderr, guessed.stderr[-3000:]
    ours = client(LAKENORM_CLIENT, shared_engine.address, shared_engine.directory)
    assert ours.returncode == 0, ours.stderr[-3000:]
    assert ours.stdout.split() == ["3", "4"]


@pytest.mark.slow
def test_the_token_is_for_the_engines_user_only_and_in_no_state_status_or_command_line(shared_engine):
    directory = shared_engine.directory
    token = kept_token(directory)
    assert token and len(token) >= 32
    for secret_file in (TOKEN_FILE, engine.SECRET_SETTINGS_FILE):
        assert stat.S_IMODE((directory / secret_file).stat().st_mode) == 0o600
    running = engine.status(directory)
    assert running.state == "running"
    assert token not in (directory / engine.STATE_FILE).read_text() and token not in running.text()
    assert token.encode() not in Path(f"/proc/{running.engine.pid}/cmdline").read_bytes()
    assert client_token({"remote": shared_engine.address}, directory) == token
    assert client_token({"remote": "sc://elsewhere:15002"}, directory) is None


def test_secret_settings_go_to_the_owner_only_file_not_the_command_line(tmp_path):
    conf = {"spark.hadoop.fs.s3a.access.key": "AKIA-RECOGNIZABLE", "spark.hadoop.fs.s3a.secret.key": "s3cr3t",
            "spark.hadoop.fs.s3a.endpoint": "http://127.0.0.1:9000"}
    secrets_file = engine.keep_secret_settings(conf, tmp_path)
    command = " ".join(engine.server_command(conf, secrets_file))
    assert "AKIA-RECOGNIZABLE" not in command and "s3cr3t" not in command
    assert "spark.hadoop.fs.s3a.endpoint=http://127.0.0.1:9000" in command and str(secrets_file) in command
    assert sorted(secrets_file.read_text().splitlines()) == ["spark.hadoop.fs.s3a.access.key AKIA-RECOGNIZABLE",
                                                             "spark.hadoop.fs.s3a.secret.key s3cr3t"]
    assert stat.S_IMODE(secrets_file.stat().st_mode) == 0o600


def test_a_token_from_the_environment_the_configuration_names(tmp_path, monkeypatch):
    sources = [{"name": "shop", "landing": ".", "catalog": str(write_catalog(tmp_path / "catalog.json"))}]
    spark = {"remote": "sc://127.0.0.1:15010", "engine_token_env": "SHOP_ENGINE_TOKEN"}
    conf = parse_config({"warehouse": "w", "sources": sources, "spark": spark}, tmp_path).spark
    monkeypatch.setenv("SHOP_ENGINE_TOKEN", "from-the-environment")
    assert engine_token(conf) == client_token(conf, tmp_path) == "from-the-environment"
    assert "engine_token_env" not in engine.server_conf({"master": "local[2]", **conf}, "127.0.0.1", 15010)
    monkeypatch.delenv("SHOP_ENGINE_TOKEN")
    with pytest.raises(LakenormError, match="SHOP_ENGINE_TOKEN, which is not set"):
        engine_token(conf)
    assert engine_token({}) != engine_token({})  # a new random one per engine otherwise
    with pytest.raises(ConfigError, match="engine_token_env"):
        parse_config({"warehouse": "w", "sources": sources, "spark": {"engine_token_env": "not a name"}}, tmp_path)
