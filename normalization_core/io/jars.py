"""Delta Lake's JVM jars: resolved once from Maven Central into a project-local cache.

Later sessions put the cached jars on `spark.jars` and never touch the network.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

# The newest Delta build for Spark 4.2 on Maven Central. The Python package delta-spark 4.4.1
# differs from 4.4.0 only in its version string, and 4.4.1 published no jars.
DELTA_COORDINATE = "io.delta:delta-spark_4.2_2.13:4.4.0"
JARS_DIR_ENV = "LAKENORM_JARS_DIR"
DEFAULT_JARS_DIR = Path(".lakenorm") / "jars"
_LIST_FILE = "jars.txt"


def jars_dir() -> Path:
    return Path(os.environ.get(JARS_DIR_ENV) or DEFAULT_JARS_DIR).resolve()


def cached_jars(directory: Path | None = None) -> list[str] | None:
    """The cached jar paths, or None when the cache is missing or incomplete."""
    directory = directory or jars_dir()
    listing = directory / _LIST_FILE
    if not listing.is_file():
        return None
    jars = [str(directory / name) for name in listing.read_text().split()]
    return jars if jars and all(Path(j).is_file() for j in jars) else None


def ensure_delta_jars(directory: Path | None = None) -> list[str]:
    """Cached jars, resolving them first (one network access) when the cache is empty."""
    directory = directory or jars_dir()
    jars = cached_jars(directory)
    if jars is None:
        resolve_delta_jars(directory)
        jars = cached_jars(directory)
    if jars is None:
        raise RuntimeError(f"Delta jars could not be resolved into {directory}")
    return jars


def resolve_delta_jars(directory: Path) -> None:
    """Let Spark's Ivy resolve Delta in a child JVM, then keep the jars pyspark lacks."""
    ivy = directory / "ivy"
    code = (
        "from pyspark.sql import SparkSession;"
        f"SparkSession.builder.master('local[1]').config('spark.jars.packages', {DELTA_COORDINATE!r})"
        f".config('spark.jars.ivy', {str(ivy)!r}).config('spark.ui.enabled', 'false')"
        ".getOrCreate().stop()"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-15:])
        raise RuntimeError(f"resolving {DELTA_COORDINATE} from Maven Central failed:\n{tail}")
    directory.mkdir(parents=True, exist_ok=True)
    keep = [jar for jar in sorted((ivy / "jars").glob("*.jar")) if not _shipped_by_pyspark(jar.name)]
    for jar in keep:
        os.replace(jar, directory / jar.name)
    (directory / _LIST_FILE).write_text("\n".join(jar.name for jar in keep) + "\n")


def _shipped_by_pyspark(ivy_jar_name: str) -> bool:
    """Ivy names jars `<org>_<artifact>-<version>.jar`; pyspark's folder has `<artifact>-<version>.jar`."""
    import pyspark

    artifact = ivy_jar_name.split("_", 1)[-1].rsplit("-", 1)[0]
    shipped = Path(pyspark.__file__).parent / "jars"
    return any(p.name.rsplit("-", 1)[0] == artifact for p in shipped.glob("*.jar"))


def main() -> None:
    """`python -m normalization_core.io.jars`: resolve the cache (set-up step of `make`)."""
    jars = ensure_delta_jars()
    print(f"{len(jars)} Delta jars cached in {jars_dir()}")


if __name__ == "__main__":
    main()
