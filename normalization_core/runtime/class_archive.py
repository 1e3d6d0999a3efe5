"""The driver JVM's class archive (HotSpot's application class-data sharing), recorded once at set-up.

A cold JVM spends seconds loading and verifying Spark's and Delta's ~25,000 classes; a JVM started with
`-XX:SharedArchiveFile` maps the ones a recorded run loaded, already parsed and verified. The archive is
recorded by a child process that runs a small normalization with `-XX:ArchiveClassesAtExit` (HotSpot
writes it when that JVM exits) and kept beside the jar cache with a fingerprint of the JVM, pyspark and
Delta it was recorded with: a session uses it only while all three are the same. HotSpot checks the rest
itself (an archive it cannot use is skipped with a warning, never an error).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from pyspark.sql import SparkSession

from normalization_core.runtime.connect import is_connect
from normalization_core.runtime.jars import DELTA_COORDINATE, jars_dir

ARCHIVE_FILE = "jvm-classes.jsa"
FINGERPRINT_FILE = "jvm-classes.json"
DRIVER_JAVA_OPTIONS = "spark.driver.extraJavaOptions"
_CLASS_PATH_OPTIONS = ("spark.driver.extraClassPath",)
"""A class path put before pyspark's differs from the recorded one: HotSpot would refuse the archive."""
_SHARING_FLAGS = ("-Xshare", "SharedArchiveFile", "ArchiveClassesAtExit")
"""JVM options by which a user already chose what the JVM shares (`-Xshare:off` turns the archive off)."""


def java_executable() -> Path | None:
    """The `java` pyspark starts: `$JAVA_HOME/bin/java`, else the one on the PATH (as `spark-class` does)."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).exists() else None


def jvm_fingerprint() -> dict[str, str]:
    """What an archive is valid for: the JVM build (its path and `release` file), pyspark (its version and its
    jars' files: HotSpot refuses an archive whose class path jars changed, e.g. pyspark installed again at the
    same version) and Delta."""
    import pyspark

    java = java_executable()
    release = java.parent.parent / "release" if java else None
    jars = [p.stat() for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar")]
    return {"java": str(java), "java_release": release.read_text() if release and release.is_file() else "",
            "pyspark": pyspark.__version__, "delta": DELTA_COORDINATE,
            "pyspark_jars": f"{len(jars)} jars, {sum(s.st_size for s in jars)} bytes, "
                            f"newest {max((s.st_mtime_ns for s in jars), default=0)}"}


def current_archive(directory: Path | None = None) -> Path | None:
    """The recorded archive when it was recorded with this JVM, pyspark and Delta; else None."""
    directory = directory or jars_dir()
    archive, fingerprint = directory / ARCHIVE_FILE, directory / FINGERPRINT_FILE
    if not (archive.is_file() and fingerprint.is_file()):
        return None
    try:
        recorded = json.loads(fingerprint.read_text())
    except ValueError:
        return None
    return archive if recorded == jvm_fingerprint() else None


def with_class_archive(conf: Mapping[str, str]) -> dict[str, str]:
    """`conf` with the driver JVM started from the class archive, when there is a current one and neither the
    JVM options nor a class path already decide otherwise."""
    options = conf.get(DRIVER_JAVA_OPTIONS, "")
    if any(flag in options for flag in _SHARING_FLAGS) or any(conf.get(key) for key in _CLASS_PATH_OPTIONS):
        return dict(conf)
    archive = current_archive()
    if archive is None:
        return dict(conf)
    return {**conf, DRIVER_JAVA_OPTIONS: f"{options} -XX:SharedArchiveFile={archive}".strip()}


def recording_options(archive: Path) -> str:
    """Driver JVM options of the recording run: its classes are written to `archive` when the JVM exits."""
    return f"-XX:ArchiveClassesAtExit={archive}"


def stop_jvm(spark: SparkSession) -> None:
    """Stop the session and wait for its JVM to exit (a recording JVM writes its archive while exiting).

    pyspark's JVM exits when its standard input closes; the Python process would not wait for it."""
    if is_connect(spark):
        raise RuntimeError("a Spark Connect session has no JVM in this process: it cannot record an archive")
    gateway = spark.sparkContext._gateway  # type: ignore[attr-defined]
    spark.stop()
    process = getattr(gateway, "proc", None)
    if process is None:
        raise RuntimeError("this session's JVM was not started by this process: it cannot record an archive")
    process.stdin.close()
    process.wait(timeout=300)


def record_archive(workload: Sequence[str], directory: Path | None = None) -> Path:
    """Run `workload` (a command line taking the archive's path as its last argument; its session is a
    `spark.recording_session`), then keep the archive with its fingerprint.

    The archive replaces the old one in one rename; a failed recording leaves the old one as it was."""
    directory = directory or jars_dir()
    directory.mkdir(parents=True, exist_ok=True)
    recording = directory / f".{ARCHIVE_FILE}.{os.getpid()}"
    try:
        done = subprocess.run([*workload, str(recording)], capture_output=True, text=True)
        if done.returncode != 0 or not recording.is_file():
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
            raise RuntimeError(f"recording the JVM class archive failed (exit {done.returncode}):\n{tail}")
        (directory / FINGERPRINT_FILE).unlink(missing_ok=True)  # never a new fingerprint on an old archive
        os.replace(recording, directory / ARCHIVE_FILE)
        (directory / FINGERPRINT_FILE).write_text(json.dumps(jvm_fingerprint(), indent=1) + "\n")
    finally:
        recording.unlink(missing_ok=True)
    return directory / ARCHIVE_FILE


def ensure_class_archive(workload_module: str) -> tuple[Path, bool]:
    """The current archive, recorded first by `python -m <workload_module> --record ARCHIVE` when there is
    none (the set-up step of `make`); also whether it was recorded now."""
    archive = current_archive()
    if archive is not None:
        return archive, False
    return record_archive([sys.executable, "-m", workload_module, "--record"]), True
