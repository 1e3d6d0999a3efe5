"""What `make stack-up` writes and reads, checked without starting it: lakenorm accepts the stack's configuration,
and Dagster accepts both instance files of deploy/ (the stack's and the Kubernetes one)."""
from __future__ import annotations

import json
import shutil

import pytest
from dagster._core.instance.config import dagster_instance_config  # not exported by dagster 1.13

from deploy.stack import REPO, Stack, write_files
from normalization_core.configuration.config import load_config


def test_the_stacks_configuration_is_valid_and_points_at_its_services(tmp_path):
    ports = {"postgres": 5, "metastore": 4, "s3": 6, "spark": 7, "engine": 9, "webserver": 8}
    (tmp_path / "dagster_home").mkdir()
    (tmp_path / "stack.json").write_text(json.dumps({"ports": ports}))
    stack = Stack(tmp_path)
    write_files(stack)
    config = load_config(stack.config_file())
    assert config.spark["master"] == "spark://127.0.0.1:7"
    assert config.spark["remote"] == "sc://127.0.0.1:9"  # every run a client of the engine, the engine on the master
    assert config.object_store.endpoint == "http://127.0.0.1:6"
    assert config.table_path("shop", "orders") == "s3a://lakenorm/warehouse/shop/orders"
    assert str(config.source("shop").landing) == "s3a://lakenorm/landing/shop"
    assert "hadoop-aws" in config.spark["spark.executor.extraClassPath"]
    assert config.source("shop").register.schema == "shop"  # shop.<table> by name, in the stack's metastore
    assert (config.spark["spark.sql.catalogImplementation"], config.spark["spark.hadoop.hive.metastore.uris"]) == \
        ("hive", "thrift://127.0.0.1:4")
    assert config.spark["spark.sql.warehouse.dir"] == (tmp_path / "metastore" / "warehouse").as_uri()
    assert stack.env()["LAKENORM_PG_URL"] == "postgresql+psycopg2://dagster@127.0.0.1:5/dagster"
    assert stack.env()["LAKENORM_ENGINE_DIR"] == str(tmp_path / "engine")


@pytest.mark.parametrize("instance_file", ["dagster.local.yaml", "dagster.yaml"])
def test_deploys_instance_files_are_valid_dagster_instances(tmp_path, instance_file):
    shutil.copy(REPO / "deploy" / instance_file, tmp_path / "dagster.yaml")
    settings, _ = dagster_instance_config(str(tmp_path))
    assert "postgres" in settings["storage"]
    assert settings["python_logs"]["managed_python_loggers"] == ["lakenorm"]
    limits = (settings.get("concurrency", {}).get("runs") or settings["run_coordinator"]["config"])
    assert (settings.get("run_queue") or settings["run_coordinator"]["config"])["dequeue_interval_seconds"] == 1
    assert {"key": "lakenorm/source", "value": {"applyLimitPerUniqueValue": True}, "limit": 1} \
        in limits["tag_concurrency_limits"]
