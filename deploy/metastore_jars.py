"""Apache Hive 4.0.1's jars from Maven Central, resolved once into the project's jar cache by Apache Ivy (which
pyspark ships): `python -m deploy.metastore_jars`, a set-up step of `make stack-up` and `make test`. Later starts
read them from there and never touch the network.

- `.lakenorm/jars/metastore`: the standalone metastore server with its runtime dependencies, Hadoop 3.3.6's
  `hadoop-common` (the release Hive 4.0.1 was built with; the server runs in a JVM of its own), the PostgreSQL
  driver, and the schema tool's PostgreSQL scripts (from the release's `-bin.tar.gz`, also on Maven Central).
- `.lakenorm/jars/metastore/client`: the Hive 4.0.1 client a Spark driver talks to that server with
  (`client_settings`). Spark 4.2's built-in client is Hive 2.3.10, which asks for tables with a call (`get_table`)
  Hive 4's server no longer has; Spark loads another client version in a class loader of its own, from these jars
  (the set Spark itself would download for `spark.sql.hive.metastore.jars: maven`).
"""
from __future__ import annotations

import shutil
import subprocess
import tarfile
from pathlib import Path

from deploy.services import SPARK_HOME
from normalization_core.runtime.jars import LIST_FILE, ensure_jars, jars_dir

HIVE_VERSION = "4.0.1"
HADOOP_VERSION = "3.3.6"
"""Hadoop for the server and the client's HDFS classes: the release Hive 4.0.1 was built with."""
SCHEMA_SCRIPTS = Path("scripts") / "metastore" / "upgrade" / "postgres"
"""Where the schema tool looks for its scripts under `METASTORE_HOME` (the server's jar folder)."""
_SERVER_MODULE = """
    <dependency org="org.apache.hive" name="hive-standalone-metastore-server" rev="{hive}" conf="default">
      <artifact name="hive-standalone-metastore-server" type="jar" ext="jar"/>
      <artifact name="hive-standalone-metastore-server" type="tar.gz" ext="tar.gz" m:classifier="bin"/>
    </dependency>
    <dependency org="org.apache.hadoop" name="hadoop-common" rev="{hadoop}" conf="default"/>
    <dependency org="org.postgresql" name="postgresql" rev="42.7.4" conf="default"/>
    <!-- Hive's folder creation names an HDFS exception even for local folders: that jar alone -->
    <dependency org="org.apache.hadoop" name="hadoop-hdfs" rev="{hadoop}" conf="default" transitive="false"/>
    <!-- the logging API of the server's log4j 2.18 (its POM leaves it to Hive's parent POM) -->
    <dependency org="org.apache.logging.log4j" name="log4j-api" rev="2.18.0" conf="default"/>
    <!-- one logging binding (log4j 2's), not also Hadoop's reload4j -->
    <exclude org="org.slf4j" module="slf4j-reload4j"/>
    <exclude org="ch.qos.reload4j" module="reload4j"/>
"""
_CLIENT_MODULE = """
    <dependency org="org.apache.hive" name="hive-metastore" rev="{hive}" conf="default"/>
    <dependency org="org.apache.hive" name="hive-exec" rev="{hive}" conf="default"/>
    <dependency org="org.apache.hive" name="hive-common" rev="{hive}" conf="default"/>
    <dependency org="org.apache.hive" name="hive-serde" rev="{hive}" conf="default"/>
    <dependency org="org.apache.hadoop" name="hadoop-hdfs" rev="{hadoop}" conf="default" transitive="false"/>
    <dependency org="org.datanucleus" name="datanucleus-api-jdo" rev="5.2.8" conf="default"/>
    <dependency org="org.datanucleus" name="datanucleus-rdbms" rev="5.2.10" conf="default"/>
    <dependency org="org.datanucleus" name="javax.jdo" rev="3.2.0-release" conf="default"/>
    <dependency org="org.springframework" name="spring-core" rev="5.3.21" conf="default"/>
    <dependency org="org.springframework" name="spring-jdbc" rev="5.3.21" conf="default"/>
    <dependency org="org.antlr" name="antlr4-runtime" rev="4.9.3" conf="default"/>
    <dependency org="org.apache.derby" name="derby" rev="10.14.2.0" conf="default"/>
    <exclude org="org.apache.calcite" module="calcite-druid"/>
    <exclude org="org.apache.curator"/>
    <exclude org="org.pentaho"/>
    <exclude org="org.apache.hive" module="hive-vector-code-gen"/>
"""
"""Spark 4.2's own list for a Hive 4.0.1 client (`IsolatedClientLoader`: its extra dependencies, exclusions)."""
_IVY_FILE = """<ivy-module version="2.0" xmlns:m="http://ant.apache.org/ivy/maven">
  <info organisation="lakenorm" module="{name}"/>
  <dependencies>{dependencies}
    <!-- Hadoop 2's client jars, which some Hive dependencies name: Hadoop 3's classes come with hadoop-common
         (the server) or from Spark's own class loader (the client) -->
    <exclude org="org.apache.hadoop" module="hadoop-client-api"/>
    <exclude org="org.apache.hadoop" module="hadoop-client-runtime"/>
  </dependencies>
</ivy-module>
"""


def server_jars_dir() -> Path:
    return jars_dir() / "metastore"


def client_jars_dir() -> Path:
    return server_jars_dir() / "client"


def ensure_server_jars() -> list[str]:
    """The metastore server's jars (and schema scripts), resolved from Maven Central the first time."""
    return ensure_jars(f"org.apache.hive:hive-standalone-metastore-server:{HIVE_VERSION}", server_jars_dir(),
                       lambda _, folder: resolve(_SERVER_MODULE, "metastore-server", folder))


def ensure_client_jars() -> list[str]:
    return ensure_jars(f"org.apache.hive:hive-metastore:{HIVE_VERSION}", client_jars_dir(),
                       lambda _, folder: resolve(_CLIENT_MODULE, "metastore-client", folder))


def client_settings() -> dict[str, str]:
    """The `spark:` settings of a driver whose catalog is this metastore server: Spark's Hive 4.0.1 client from
    the jar cache (`ensure_client_jars`; with `hive.metastore.uris`, which names the server)."""
    return {"spark.sql.hive.metastore.version": HIVE_VERSION, "spark.sql.hive.metastore.jars": "path",
            "spark.sql.hive.metastore.jars.path": f"{client_jars_dir().as_uri()}/*.jar"}


def resolve(dependencies: str, name: str, directory: Path) -> None:
    """Ivy resolves `dependencies` (runtime scope, transitively) into `directory`, then lists the jars there; a
    release archive among them leaves its PostgreSQL schema scripts and goes."""
    ivy = directory.parent / f".{directory.name}-ivy"
    ivy.mkdir(parents=True, exist_ok=True)
    (ivy / "ivy.xml").write_text(_IVY_FILE.format(
        name=name, dependencies=dependencies.format(hive=HIVE_VERSION, hadoop=HADOOP_VERSION)))
    ivy_jar = next(iter(sorted((SPARK_HOME / "jars").glob("ivy-*.jar"))))
    done = subprocess.run(["java", "-jar", str(ivy_jar), "-ivy", str(ivy / "ivy.xml"), "-cache", str(ivy / "cache"),
                           "-confs", "default", "-types", "jar", "bundle", "tar.gz", "-retrieve",
                           str(directory / "[organisation]_[artifact]-[revision](-[classifier]).[ext]")],
                          capture_output=True, text=True)
    if done.returncode != 0:
        tail = "\n".join(done.stdout.strip().splitlines()[-15:])
        raise RuntimeError(f"resolving Hive {HIVE_VERSION}'s {name} from Maven Central failed:\n{tail}")
    for archive in directory.glob("*-bin.tar.gz"):
        _extract_schema_scripts(archive, directory)
        archive.unlink()
    shutil.rmtree(ivy, ignore_errors=True)
    (directory / LIST_FILE).write_text("".join(f"{jar.name}\n" for jar in sorted(directory.glob("*.jar"))))


def _extract_schema_scripts(archive: Path, directory: Path) -> None:
    with tarfile.open(archive) as release:
        for member in release.getmembers():
            parts = Path(member.name).parts  # apache-hive-metastore-<version>-bin/scripts/...
            if member.isfile() and Path(*parts[1:-1]) == SCHEMA_SCRIPTS:
                target = directory / SCHEMA_SCRIPTS / parts[-1]
                target.parent.mkdir(parents=True, exist_ok=True)
                with release.extractfile(member) as source:  # type: ignore[union-attr]
                    target.write_bytes(source.read())


def main() -> None:
    """Both sets, the client's first: the server's list is what `make` checks."""
    client, server = ensure_client_jars(), ensure_server_jars()
    print(f"Hive {HIVE_VERSION} metastore: {len(server)} server jars in {server_jars_dir()}, "
          f"{len(client)} client jars in {client_jars_dir()}")


if __name__ == "__main__":
    main()
