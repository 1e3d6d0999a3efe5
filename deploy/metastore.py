"""A Hive Metastore server for every driver's catalog: Apache Hive's standalone metastore 4.0.1 in a JVM of its own,
its schema in a database of the stack's PostgreSQL, on a loopback Thrift port. Its jars: `deploy.metastore_jars`.
"""
from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

from deploy import services
from deploy.metastore_jars import ensure_server_jars, server_jars_dir

DATABASE = "metastore"
"""The metastore's database in the PostgreSQL cluster (beside Dagster's)."""
SCHEMA_TOOL = "org.apache.hadoop.hive.metastore.tools.schematool.MetastoreSchemaTool"


@dataclass(frozen=True)
class Metastore:
    """A metastore server whose configuration, log and warehouse are in `folder`, its schema in `postgres`."""

    folder: Path
    port: int
    postgres: services.Postgres
    log_file: Path | None = None
    """Its output (default `<folder>/metastore.log`)."""

    @property
    def uri(self) -> str:
        return f"thrift://127.0.0.1:{self.port}"

    @property
    def warehouse(self) -> Path:
        """Where the metastore puts a database created without a location (the tables lakenorm registers are
        external: they stay at their own locations)."""
        return self.folder / "warehouse"

    @property
    def log(self) -> Path:
        return self.log_file or self.folder / "metastore.log"

    def settings(self) -> dict[str, str]:
        return {
            "javax.jdo.option.ConnectionURL": f"jdbc:postgresql://127.0.0.1:{self.postgres.port}/{DATABASE}",
            "javax.jdo.option.ConnectionDriverName": "org.postgresql.Driver",
            "javax.jdo.option.ConnectionUserName": self.postgres.user,
            "javax.jdo.option.ConnectionPassword": "",  # the cluster trusts loopback
            "metastore.thrift.bind.host": "127.0.0.1",
            "metastore.thrift.port": str(self.port),
            "metastore.warehouse.dir": self.warehouse.as_uri(),
            "metastore.warehouse.external.dir": self.warehouse.as_uri(),
            "metastore.metrics.enabled": "false",
            # tables and databases given back as Spark registered them, not rewritten for what the server
            # thinks a client can read (Hive 4's default transformer)
            "metastore.metadata.transformer.class": " ",
        }

    def write_config(self) -> None:
        conf = self.folder / "conf"
        conf.mkdir(parents=True, exist_ok=True)
        self.warehouse.mkdir(parents=True, exist_ok=True)
        properties = "".join(f"  <property><name>{escape(k)}</name><value>{escape(v)}</value></property>\n"
                             for k, v in self.settings().items())
        (conf / "metastore-site.xml").write_text(f'<?xml version="1.0"?>\n<configuration>\n{properties}'
                                                 "</configuration>\n")

    def _java(self, main_class: str, *args: str) -> list[str]:
        classpath = ":".join([str(self.folder / "conf"), *ensure_server_jars()])
        return ["java", "-Xmx512m", "-cp", classpath, main_class, *args]

    def _env(self) -> dict[str, str]:
        return {"METASTORE_HOME": str(server_jars_dir()), "METASTORE_CONF_DIR": str(self.folder / "conf")}

    def init_schema(self) -> None:
        """The metastore's tables in its database (created if missing) by Hive's own schema tool; a database
        that has them already is upgraded if it needs to be, else left as it is."""
        self.postgres.create_database(DATABASE)
        self.write_config()
        done = subprocess.run(self._java(SCHEMA_TOOL, "-initOrUpgradeSchema", "-dbType", "postgres"),
                              env={**os.environ, **self._env()}, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"the metastore's schema tool failed:\n{(done.stdout + done.stderr)[-3000:]}")

    def start(self) -> subprocess.Popen:
        """`HiveMetaStore`, returned once its port answers."""
        server = services.start(self._java("org.apache.hadoop.hive.metastore.HiveMetaStore"), self.log, self._env())
        try:
            services.wait_for_port(self.port, "the Hive metastore", timeout=180)
        except TimeoutError:
            services.stop(server.pid)
            raise RuntimeError(f"the Hive metastore did not start: {self.log.read_text(errors='replace')[-3000:]}")
        return server


@contextmanager
def metastore(folder: Path, postgres: services.Postgres) -> Iterator[Metastore]:
    """A metastore server for a block (tests), its schema in `postgres`: started on a free port, stopped after."""
    server = Metastore(folder, services.free_port(), postgres)
    server.init_schema()
    process = server.start()
    try:
        yield server
    finally:
        services.stop(process.pid)
