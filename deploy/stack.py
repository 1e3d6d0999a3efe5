"""The whole deployment on one machine, every service on loopback:

    python -m deploy.stack up      # PostgreSQL, a Hive metastore, S3 server + bucket, Spark master + 2 workers,
                                   # the engine (a Spark Connect server on the master), Dagster daemon + UI
    python -m deploy.stack demo    # sample packages into the bucket; the daemon's sensor runs them on the workers
    python -m deploy.stack status  # each service: pid, address, alive or not
    python -m deploy.stack down    # stops every service and forgets the stack's state (the S3 server is in memory)

State under `--root` (default .lakenorm/stack): stack.json (ports), run/<service>.pid, logs/<service>.log,
postgres/ (the instance's and the metastore's databases), metastore/ (its configuration and the schemas'
folders), spark/ (worker folders), engine/ (the engine's state and log), dagster_home/,
lakenorm.yaml, catalog.json. Every run goes through the engine (`spark.remote`): one warm driver for all runs.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

from deploy import services
from deploy.metastore import Metastore
from deploy.metastore_jars import client_settings, ensure_client_jars
from normalization_core.runtime import engine as engines
from normalization_core.runtime.jars import ensure_s3_jars

REPO = Path(__file__).resolve().parents[1]
BUCKET = "lakenorm"
SOURCE = "shop"
# The S3 server's test credentials; a real bucket takes the environment's (see deploy/README.md).
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}
PREFERRED_PORTS = {"postgres": 55432, "metastore": 9083, "s3": 9000, "spark": 7077, "engine": 15002,
                   "webserver": 3000}
WORKERS, WORKER_CORES, WORKER_MEMORY = 2, 2, "2g"
SERVICES = ["metastore", "s3", "spark-master", *(f"spark-worker-{i}" for i in range(WORKERS)), "engine",
            "dagster-daemon", "dagster-webserver"]


class Stack:
    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.state_file = self.root / "stack.json"

    def ports(self) -> dict[str, int]:
        return json.loads(self.state_file.read_text())["ports"]

    def pid_file(self, service: str) -> Path:
        return self.root / "run" / f"{service}.pid"

    def log(self, service: str) -> Path:
        return self.root / "logs" / f"{service}.log"

    def postgres(self) -> services.Postgres:
        return services.Postgres(self.root / "postgres", self.ports()["postgres"])

    def metastore(self) -> Metastore:
        return Metastore(self.root / "metastore", self.ports()["metastore"], self.postgres(), self.log("metastore"))

    def pid(self, service: str) -> int | None:
        path = self.pid_file(service)
        return int(path.read_text()) if path.is_file() else None

    def remember(self, service: str, pid: int) -> None:
        self.pid_file(service).parent.mkdir(parents=True, exist_ok=True)
        self.pid_file(service).write_text(str(pid))

    def config_file(self) -> Path:
        return self.root / "lakenorm.yaml"

    def engine_dir(self) -> Path:
        return self.root / "engine"

    def env(self) -> dict[str, str]:
        """The daemon's, the webserver's and (inherited) every run's environment: the runs find the engine's
        state (their leases; recycling between runs) in `engine_dir`."""
        home = self.root / "dagster_home"
        return {**CREDENTIALS, **services.dagster_env(home, self.config_file(), self.postgres().url),
                engines.ENGINE_DIR_ENV: str(self.engine_dir())}


def lakenorm_config(stack: Stack) -> dict:
    """The configuration every run reads: landing and warehouse in the bucket, every run a client of the engine,
    whose driver runs its jobs on the standalone master; the tables by name (`shop.<table>`) in the metastore."""
    ports = stack.ports()
    metastore = stack.metastore()
    s3a_jars = ":".join(ensure_s3_jars())  # the workers run on this machine: its jar cache, nothing shipped
    return {
        "warehouse": f"s3a://{BUCKET}/warehouse",
        "sources": [{"name": SOURCE, "landing": f"s3a://{BUCKET}/landing/{SOURCE}", "catalog": "catalog.json",
                     "register": {"schema": SOURCE}}],
        "spark": {"master": f"spark://127.0.0.1:{ports['spark']}", "remote": f"sc://127.0.0.1:{ports['engine']}",
                  "spark.cores.max": "2", "spark.executor.cores": "1", "spark.executor.memory": "512m",
                  "spark.driver.memory": "2g",
                  # the catalog: names and locations in the metastore, a schema's own folder on this machine
                  "hive.metastore.uris": metastore.uri, "spark.sql.warehouse.dir": metastore.warehouse.as_uri(),
                  **client_settings(),
                  "spark.driver.extraClassPath": s3a_jars, "spark.executor.extraClassPath": s3a_jars},
        "object_store": {"endpoint": f"http://127.0.0.1:{ports['s3']}", "region": "us-east-1"},
    }


def up(stack: Stack) -> int:
    if stack.state_file.is_file():
        if any(alive(stack, s) for s in SERVICES):
            print("the stack is already up (python -m deploy.stack status)")
            return 1
        down(stack)  # left over from a stack whose processes died: its instance would not match the new bucket
    for folder in ("run", "logs", "spark", "dagster_home"):
        (stack.root / folder).mkdir(parents=True, exist_ok=True)
    ports = {name: services.free_port(port) for name, port in PREFERRED_PORTS.items()}
    stack.state_file.write_text(json.dumps({"ports": ports}, indent=2))
    print(f"PostgreSQL 127.0.0.1:{ports['postgres']} (Dagster's runs, events, sensor ticks)")
    stack.postgres().init()
    stack.postgres().start()
    start_metastore(stack)
    start_object_store(stack, ports["s3"])
    start_spark(stack, ports["spark"])
    write_files(stack)
    start_engine(stack)
    print("dagster-daemon (sensors, run queue) and dagster-webserver")
    workspace = REPO / "workspace.yaml"
    services.create_instance_tables(stack.env())
    stack.remember("dagster-daemon", services.start_dagster_daemon(workspace, stack.env(), stack.log("dagster-daemon")).pid)
    webserver = services.start_dagster_webserver(workspace, stack.env(), ports["webserver"], stack.log("dagster-webserver"))
    stack.remember("dagster-webserver", webserver.pid)
    print(f"up: Dagster UI http://127.0.0.1:{ports['webserver']}  (logs in {stack.root / 'logs'})")
    return 0


def start_metastore(stack: Stack) -> None:
    """Hive's schema in its own PostgreSQL database (Hive's schema tool), then the server."""
    metastore = stack.metastore()
    print(f"Hive metastore {metastore.uri} (the tables by name for every driver; its schema in PostgreSQL)")
    ensure_client_jars()  # (the engine's client of it)
    metastore.init_schema()
    stack.remember("metastore", metastore.start().pid)


def start_object_store(stack: Stack, port: int) -> None:
    import boto3

    print(f"S3 server http://127.0.0.1:{port}, bucket {BUCKET}")
    stack.remember("s3", services.start_s3_server(port, stack.log("s3")).pid)
    client = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}", region_name="us-east-1",
                          aws_access_key_id="testing", aws_secret_access_key="testing")
    client.create_bucket(Bucket=BUCKET)


def start_spark(stack: Stack, port: int) -> None:
    folder = stack.root / "spark"
    master_url = f"spark://127.0.0.1:{port}"
    print(f"Spark master {master_url} and {WORKERS} workers ({WORKER_CORES} cores, {WORKER_MEMORY} each)")
    stack.remember("spark-master", services.start_spark_master(folder, port).pid)
    for i in range(WORKERS):
        worker = services.start_spark_worker(folder, i, master_url, WORKER_CORES, WORKER_MEMORY)
        stack.remember(f"spark-worker-{i}", worker.pid)


def start_engine(stack: Stack) -> None:
    """`lakenorm engine start` for the stack's configuration: a Spark Connect server whose driver takes the
    master's executors, with the bucket's S3A settings and credentials; the daemon's runs are its clients."""
    from normalization_core.configuration.config import load_config

    spark_conf = load_config(stack.config_file()).spark
    os.environ.update({**CREDENTIALS, "SPARK_LOCAL_IP": "127.0.0.1"})  # (the server's S3A credentials, its address)
    host, port = engines.engine_address(spark_conf)
    started = engines.start(spark_conf, host=host, port=port, directory=stack.engine_dir())
    print(f"engine {started.address} (Spark Connect; its driver on the master; log {started.log})")
    stack.remember("engine", started.pid)


def write_files(stack: Stack) -> None:
    from lakenorm_app.samples import write_catalog
    from normalization_core.api import config_yaml

    write_catalog(stack.root / "catalog.json")
    stack.config_file().write_text(config_yaml(lakenorm_config(stack)))
    shutil.copy(REPO / "deploy" / "dagster.local.yaml", stack.root / "dagster_home" / "dagster.yaml")


def alive(stack: Stack, service: str) -> bool:
    pid = stack.pid(service)
    return pid is not None and services.alive(pid)


def status(stack: Stack) -> int:
    if not stack.state_file.is_file():
        print("the stack is down")
        return 1
    ports = stack.ports()
    addresses = {"metastore": stack.metastore().uri, "s3": f"http://127.0.0.1:{ports['s3']}",
                 "spark-master": f"spark://127.0.0.1:{ports['spark']}",
                 "engine": f"sc://127.0.0.1:{ports['engine']}",
                 "dagster-webserver": f"http://127.0.0.1:{ports['webserver']}"}
    print(f"{'postgres':<20} {'up' if stack.postgres().running() else 'DOWN':<5} 127.0.0.1:{ports['postgres']}")
    for service in SERVICES:
        print(f"{service:<20} {'up' if alive(stack, service) else 'DOWN':<5} pid {stack.pid(service)} "
              f"{addresses.get(service, '')}")
    return 0 if stack.postgres().running() and all(alive(stack, s) for s in SERVICES) else 1


def down(stack: Stack) -> int:
    if not stack.state_file.is_file():
        print("the stack is down")
        return 0
    for service in reversed(SERVICES):
        pid = stack.pid(service)
        if pid is not None:
            services.stop(pid)
            stack.pid_file(service).unlink()
    engines.stop(stack.engine_dir())  # (stopped with its group above: this forgets its state)
    stack.postgres().stop()
    # The S3 server kept the bucket in memory: the instance's records of its packages and runs go with it.
    for folder in ("postgres", "metastore", "spark", "dagster_home"):
        shutil.rmtree(stack.root / folder, ignore_errors=True)
    stack.state_file.unlink()
    print(f"down (logs kept in {stack.root / 'logs'})")
    return 0


def demo(stack: Stack, packages: int, timeout: float) -> int:
    from deploy.stack_demo import land_in_bucket, report_tables, wait_for_runs

    if status(stack) != 0:
        print("start the stack first: python -m deploy.stack up")
        return 1
    os.environ.update(stack.env())
    load_ids, new = land_in_bucket(stack, packages)
    print(f"landed {len(new)} new package(s) in s3://{BUCKET}/landing/{SOURCE} ({len(load_ids) - len(new)} were "
          f"there); waiting for the runs of {', '.join(load_ids)}")
    runs = wait_for_runs(stack, load_ids, timeout)
    report_tables(stack)
    return 0 if runs and all(r.status.value == "SUCCESS" for r in runs) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deploy.stack", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["up", "down", "demo", "status"])
    parser.add_argument("--root", type=Path, default=REPO / ".lakenorm" / "stack")
    parser.add_argument("--packages", type=int, default=3, help="demo: how many sample packages to land")
    parser.add_argument("--timeout", type=float, default=3600, help="demo: seconds to wait for the runs")
    args = parser.parse_args(argv)
    stack = Stack(args.root)
    if args.command == "demo":
        return demo(stack, args.packages, args.timeout)
    return {"up": up, "down": down, "status": status}[args.command](stack)


if __name__ == "__main__":
    sys.exit(main())
