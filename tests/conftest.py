"""One SparkSession for the whole test run (JVM start costs seconds); temp dirs per test."""
from __future__ import annotations

import json
import logging
import socket
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from normalization_core.runtime.spark import build_spark_session

CASES = Path(__file__).parent / "cases"
TEST_SPARK_CONF = {
    "master": "local[2]",
    "spark.sql.shuffle.partitions": "2",
    "spark.driver.memory": "4g",
    "spark.ui.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
    # An S3A setting puts hadoop-aws on the class path: the object-store tests share this session.
    "spark.hadoop.fs.s3a.path.style.access": "true",
    # The throughput collector: on 2 cores G1's concurrent threads cost the suite's JVMs CPU (BENCHMARKS.md).
    "spark.driver.extraJavaOptions": "-XX:+UseParallelGC",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Modules holding slow end-to-end tests first, then the other modules using Spark, then the modules that need
    no Spark session; each module's tests kept together and in order.

    `make test` hands whole modules to two workers (`--dist loadscope --no-loadscope-reorder`): a long module
    started last would keep one worker busy after the other has finished. The modules without Spark (~1,100 tests,
    ~20 s in all, none over ~6 s) come last: the worker that finishes first takes them while the other one ends
    its last Spark module.
    """
    slow_modules = {item.module.__name__ for item in items if item.get_closest_marker("slow")}
    spark_modules = slow_modules | {item.module.__name__ for item in items if "spark" in item.fixturenames}
    items.sort(key=lambda item: (item.module.__name__ not in slow_modules, item.module.__name__ not in spark_modules))


@pytest.fixture(scope="session")
def spark():
    session = build_spark_session(TEST_SPARK_CONF, app_name="lakenorm-tests")
    yield session
    session.stop()


@dataclass(frozen=True)
class SharedEngine:
    """The test run's Spark Connect engine: its address (`spark.remote`) and folder (`LAKENORM_ENGINE_DIR`)."""

    address: str
    directory: Path


@pytest.fixture(scope="session")
def shared_engine(tmp_path_factory, worker_id) -> SharedEngine:
    """One local engine (`lakenorm engine start`) for the whole test run rather than a cold driver per client
    process: the first test that needs it starts it, the tests of every xdist worker are its clients,
    and the last worker done with it stops it. A module that kills or recycles an engine starts its own."""
    from filelock import FileLock

    from normalization_core.runtime import engine
    from tests.normalization_core.runtime.engine_project import ENGINE_CONF, free_port

    root = tmp_path_factory.getbasetemp()
    root = root.parent if worker_id != "master" else root  # the workers' folders share their parent
    directory, users = root / "shared-engine", root / "shared-engine.users"
    with FileLock(str(root / "shared-engine.lock")):
        started = engine.start(ENGINE_CONF, port=free_port(), directory=directory)  # or the running one
        users.write_text(str(int(users.read_text() if users.exists() else 0) + 1))
    yield SharedEngine(started.address, directory)
    with FileLock(str(root / "shared-engine.lock")):
        left = int(users.read_text()) - 1
        users.write_text(str(left))
        if left == 0:
            engine.stop(directory)


@pytest.fixture(scope="session")
def load_case():
    """Reads a JSON case file under tests/cases/."""
    return lambda relative: json.loads((CASES / relative).read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Bucket:
    """A bucket of the loopback S3 server, its endpoint and a boto3 client on it."""

    endpoint: str
    name: str
    client: object

    def uri(self, prefix: str) -> str:
        return f"s3a://{self.name}/{prefix}"

    def upload_tree(self, folder: Path, prefix: str) -> list[str]:
        """Every file under `folder` as `<prefix>/<relative path>`; the keys in upload order."""
        keys = []
        for path in sorted(p for p in Path(folder).rglob("*") if p.is_file()):
            keys.append(f"{prefix}/{path.relative_to(folder).as_posix()}")
            self.client.upload_file(str(path), self.name, keys[-1])
        return keys

    def objects(self, prefix: str) -> dict[str, str]:
        """Every object under `prefix`: its key and ETag (a rewritten object gets a new one)."""
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=self.name, Prefix=prefix)
        return {item["Key"]: item["ETag"] for page in pages for item in page.get("Contents", [])}


@pytest.fixture(scope="session")
def s3_endpoint():
    """moto's S3 server on loopback (a real HTTP server speaking S3), for the whole test run."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one log line per S3 request otherwise
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


@pytest.fixture
def s3_bucket(s3_endpoint, monkeypatch):
    """A new bucket (its own name: Hadoop caches one S3A client per bucket) and test credentials in the
    environment, where lakenorm reads them."""
    import boto3

    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                        "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(name, value)
    client = boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1")
    bucket = f"lake-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=bucket)
    return Bucket(s3_endpoint, bucket, client)
