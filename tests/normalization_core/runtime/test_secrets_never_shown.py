"""Secrets never shown: with recognizable values for the engine's token and the S3 credentials, loads run on real
services (moto's S3 server on loopback; the engine, with Spark's event log on; a `lakenorm normalize` and a Dagster
run as its clients, the Dagster instance's storage on disk), and neither value is in anything they printed nor in
any file they wrote (logs, the event log, the Dagster storage, the engine's state, the Delta logs and tables in the
bucket), bar the two files that keep them for the engine, readable by its user only. `engine status` shows neither,
and an error naming an engine's address leaves its token out."""
from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from lakenorm_app.samples import SampleSpec, write_catalog, write_sample_packages
from normalization_core.errors import LakenormError
from normalization_core.runtime import engine
from normalization_core.runtime.engine_token import SERVER_TOKEN_ENV, TOKEN_FILE
from normalization_core.runtime.spark import build_spark_session
from tests.normalization_core.runtime.engine_project import ENGINE_CONF, free_port

ROOT = Path(__file__).resolve().parents[3]
SECRETS = {"AWS_ACCESS_KEY_ID": "AKIARECOGNIZABLE4217", "AWS_SECRET_ACCESS_KEY": "recognizable-secret-key-5309",
           "SHOP_ENGINE_TOKEN": "recognizable-engine-token-8675"}
ENGINE_STORES = (TOKEN_FILE, engine.SECRET_SETTINGS_FILE)
"""The engine's own keeping of its token and of its settings that are credentials."""
DAGSTER_RUN = """
import sys
import dagster as dg
from normalization_core.api import load_config
from pipeline_assets.factories import build_source_assets
from pipeline_assets.resources import SparkSessionResource
config = load_config(sys.argv[1])
assets = build_source_assets(config, config.source("shop"), ["orders", "customers", "events"])
with dg.DagsterInstance.get() as instance:
    instance.add_dynamic_partitions("shop_load_ids", [sys.argv[2]])
    result = dg.materialize([assets], instance=instance, partition_key=sys.argv[2],
                            resources={"spark": SparkSessionResource(spark_conf=config.spark)})
    print("run", result.success)
"""
pytestmark = pytest.mark.slow


def found_in(text: bytes | str) -> list[str]:
    data = text.encode() if isinstance(text, str) else text
    return [name for name, value in SECRETS.items() if value.encode() in data]


def run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=900, env=env, cwd=cwd)


@pytest.fixture
def project(tmp_path, s3_bucket, monkeypatch):
    """Two sample packages in the bucket, a configuration whose engine token comes from the environment, and the
    recognizable credentials in the environment (moto takes any)."""
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    packages = tmp_path / "packages"
    write_sample_packages(packages, SampleSpec(packages=2, orders=20, customers=10, events=20, seed=5))
    s3_bucket.upload_tree(packages, "landing/shop")
    write_catalog(tmp_path / "catalog.json")
    spark = {**ENGINE_CONF, "remote": f"sc://127.0.0.1:{free_port()}", "engine_token_env": "SHOP_ENGINE_TOKEN",
             "spark.eventLog.enabled": "true", "spark.eventLog.dir": (tmp_path / "events").as_uri()}
    (tmp_path / "events").mkdir()
    doc = {"warehouse": s3_bucket.uri("warehouse"), "spark": spark,
           "sources": [{"name": "shop", "landing": s3_bucket.uri("landing/shop"), "catalog": "catalog.json"}],
           "object_store": {"endpoint": s3_bucket.endpoint, "region": "us-east-1"}}
    (tmp_path / "lakenorm.yaml").write_text(yaml.safe_dump(doc))
    return tmp_path, sorted(p.name for p in packages.iterdir())


def test_no_output_nor_file_of_a_load_through_the_engine_holds_a_secret(project, s3_bucket):
    folder, load_ids = project
    config_file = folder / "lakenorm.yaml"
    env = {**os.environ, "PYTHONPATH": str(ROOT), engine.ENGINE_DIR_ENV: str(folder / "engine"),
           "DAGSTER_HOME": str(folder / "dagster_home")}
    env.pop(SERVER_TOKEN_ENV, None)
    (folder / "dagster_home").mkdir()
    outputs = {}
    try:
        started = run(["-m", "lakenorm_app.commands", "--config", str(config_file), "engine", "start"], env, folder)
        assert started.returncode == 0, started.stderr[-3000:]
        steps = {"normalize": ["-m", "lakenorm_app.commands", "--config", str(config_file), "normalize", "--json",
                               "--load-id", load_ids[0]],
                 "dagster run": ["-c", DAGSTER_RUN, str(config_file), load_ids[1]],
                 "status": ["-m", "lakenorm_app.commands", "--config", str(config_file), "engine", "status"]}
        for step, args in steps.items():
            done = outputs[step] = run(args, env, folder)
            assert done.returncode == 0, (step, done.stderr[-3000:])
        assert "run True" in outputs["dagster run"].stdout and "running at" in outputs["status"].stdout
    finally:
        stopped = run(["-m", "lakenorm_app.commands", "--config", str(config_file), "engine", "stop"], env, folder)
    assert stopped.returncode == 0, stopped.stderr[-3000:]
    steps_run = [*outputs.items(), ("engine start", started), ("engine stop", stopped)]
    printed = {f"{step} {stream}": found_in(getattr(done, stream)) for step, done in steps_run
               for stream in ("stdout", "stderr")}
    assert {name: found for name, found in printed.items() if found} == {}

    written = [p for p in folder.rglob("*") if p.is_file() and p.name not in ENGINE_STORES]
    assert any(p.parent.name == "events" for p in written), "the engine wrote Spark's event log"
    assert any("storage" in p.parts for p in written), "the Dagster run wrote its instance's storage"
    assert {str(p.relative_to(folder)): found for p in written if (found := found_in(p.read_bytes()))} == {}
    objects = s3_bucket.objects("")
    assert any("/_delta_log/" in key for key in objects)
    holding = {key: found for key in objects if (found := found_in(
        s3_bucket.client.get_object(Bucket=s3_bucket.name, Key=key)["Body"].read()))}
    assert holding == {}
    kept = {name: found_in((folder / "engine" / name).read_bytes()) for name in ENGINE_STORES}
    assert kept == {TOKEN_FILE: ["SHOP_ENGINE_TOKEN"],  # where the engine keeps them: its user's only
                    engine.SECRET_SETTINGS_FILE: ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"]}
    for name in ENGINE_STORES:
        assert stat.S_IMODE((folder / "engine" / name).stat().st_mode) == 0o600


def test_an_error_naming_an_engines_address_leaves_its_token_out():
    remote = f"sc://127.0.0.1:{free_port()}/;token={SECRETS['SHOP_ENGINE_TOKEN']}"
    with pytest.raises(LakenormError) as err:
        build_spark_session({"master": "local[2]", "remote": remote})
    assert found_in(str(err.value)) == [] and "token=" in str(err.value)
