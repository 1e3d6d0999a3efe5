"""JVM jars from Maven Central, resolved once into a project-local cache: Delta Lake's, and (for
`s3a://` locations) Hadoop's S3A connector with its AWS SDK bundle, each set in its own folder.

Later sessions put the cached jars on the classpath and never touch the network.
"""
from __future__ import annotations

import argparse
import fcntl
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

# The newest Delta build for Spark 4.2 on Maven Central. The Python package delta-spark 4.4.1
# differs from 4.4.0 only in its version string, and 4.4.1 published no jars.
DELTA_COORDINATE = "io.delta:delta-spark_4.2_2.13:4.4.0"
HADOOP_AWS = "org.apache.hadoop:hadoop-aws"
"""Versioned as the hadoop-client jars pyspark ships (they must match); brings the AWS SDK v2 bundle (~690 MB)."""
JARS_DIR_ENV = "LAKENORM_JARS_DIR"
DEFAULT_JARS_DIR = Path(".lakenorm") / "jars"
S3_SUBDIR = "s3"
LIST_FILE = "jars.txt"


PROJECT_ROOT = Path(__file__).resolve().parents[2]


def jars_dir() -> Path:
    """`LAKENORM_JARS_DIR`, else `.lakenorm/jars` of the checkout lakenorm runs from (an editable install: `make`
    resolves the jars there) whatever the working directory (a Dagster run's is its instance's folder: a cache
    there would be resolved from the network on the first run), else of the working directory."""
    configured = os.environ.get(JARS_DIR_ENV)
    if configured:
        return Path(configured).resolve()
    base = PROJECT_ROOT if (PROJECT_ROOT / "pyproject.toml").is_file() else Path.cwd()
    return (base / DEFAULT_JARS_DIR).resolve()


def s3_jars_dir() -> Path:
    return jars_dir() / S3_SUBDIR


def hadoop_aws_coordinate() -> str:
    """hadoop-aws of the Hadoop version pyspark ships (`hadoop-client-api-<version>.jar`)."""
    import pyspark

    shipped = sorted((Path(pyspark.__file__).parent / "jars").glob("hadoop-client-api-*.jar"))
    if not shipped:
        raise RuntimeError("pyspark ships no hadoop-client-api jar: cannot choose a hadoop-aws version")
    return f"{HADOOP_AWS}:{shipped[0].name.removeprefix('hadoop-client-api-').removesuffix('.jar')}"


def cached_jars(directory: Path | None = None) -> list[str] | None:
    """The cached jar paths, or None when the cache is missing or incomplete."""
    directory = directory or jars_dir()
    listing = directory / LIST_FILE
    if not listing.is_file():
        return None
    jars = [str(directory / name) for name in listing.read_text().split()]
    return jars if jars and all(Path(j).is_file() for j in jars) else None


def ensure_jars(coordinate: str, directory: Path,
                resolve: Callable[[str, Path], None] | None = None) -> list[str]:
    """Cached jars of `coordinate`, resolving them first (one network access) when the cache is empty: by
    `resolve` (default `resolve_jars`), which writes the jars and their list into `directory`."""
    jars = cached_jars(directory)
    if jars is None:
        with _resolution_lock(directory):  # concurrent runs on a fresh cache: one resolves, the others wait
            jars = cached_jars(directory)
            if jars is None:
                (resolve or resolve_jars)(coordinate, directory)
                jars = cached_jars(directory)
    if jars is None:
        raise RuntimeError(f"{coordinate} could not be resolved into {directory}")
    return jars


@contextmanager
def _resolution_lock(directory: Path) -> Iterator[None]:
    directory.parent.mkdir(parents=True, exist_ok=True)
    with open(directory.parent / f".{directory.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def ensure_delta_jars(directory: Path | None = None) -> list[str]:
    return ensure_jars(DELTA_COORDINATE, directory or jars_dir())


def ensure_s3_jars(directory: Path | None = None) -> list[str]:
    """hadoop-aws and the AWS SDK: only sessions that use `s3a://` locations put them on the classpath."""
    return ensure_jars(hadoop_aws_coordinate(), directory or s3_jars_dir())


def resolve_jars(coordinate: str, directory: Path) -> None:
    """Let Spark's Ivy resolve `coordinate` in a child JVM, then keep the jars pyspark lacks."""
    ivy = directory / "ivy"
    code = (
        "from pyspark.sql import SparkSession;"
        f"SparkSession.builder.master('local[1]').config('spark.jars.packages', {coordinate!r})"
        f".config('spark.jars.ivy', {str(ivy)!r}).config('spark.ui.enabled', 'false')"
        ".getOrCreate().stop()"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-15:])
        raise RuntimeError(f"resolving {coordinate} from Maven Central failed:\n{tail}")
    directory.mkdir(parents=True, exist_ok=True)
    keep = [jar for jar in sorted((ivy / "jars").glob("*.jar")) if not _shipped_by_pyspark(jar.name)]
    for jar in keep:
        os.replace(jar, directory / jar.name)
    (directory / LIST_FILE).write_text("\n".join(jar.name for jar in keep) + "\n")


def _shipped_by_pyspark(ivy_jar_name: str) -> bool:
    """Ivy names jars `<org>_<artifact>-<version>.jar`; pyspark's folder has `<artifact>-<version>.jar`."""
    import pyspark

    artifact = ivy_jar_name.split("_", 1)[-1].rsplit("-", 1)[0]
    shipped = Path(pyspark.__file__).parent / "jars"
    return any(p.name.rsplit("-", 1)[0] == artifact for p in shipped.glob("*.jar"))


def main(argv: list[str] | None = None) -> None:
    """`python -m normalization_core.runtime.jars [--s3]`: resolve the cache (set-up step of `make`)."""
    parser = argparse.ArgumentParser(prog="python -m normalization_core.runtime.jars")
    parser.add_argument("--s3", action="store_true", help="hadoop-aws and the AWS SDK (for s3a:// locations)")
    if parser.parse_args(argv).s3:
        print(f"{len(ensure_s3_jars())} S3A jars cached in {s3_jars_dir()}")
    else:
        print(f"{len(ensure_delta_jars())} Delta jars cached in {jars_dir()}")


if __name__ == "__main__":
    main()
