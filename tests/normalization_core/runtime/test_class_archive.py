"""The driver JVM's class archive: when a session uses it, how it is recorded and replaced, and that a JVM
started from it maps Spark's and Delta's classes instead of loading them."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from normalization_core.runtime.class_archive import (
    ARCHIVE_FILE,
    FINGERPRINT_FILE,
    current_archive,
    jvm_fingerprint,
    record_archive,
    with_class_archive,
)
from normalization_core.runtime.jars import JARS_DIR_ENV, jars_dir

JAVA = "spark.driver.extraJavaOptions"


def recorded(directory: Path, **changed: str) -> Path:
    """An archive in `directory` with the fingerprint of this JVM, pyspark and Delta (or `changed` ones)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / ARCHIVE_FILE).write_bytes(b"archive")
    (directory / FINGERPRINT_FILE).write_text(json.dumps({**jvm_fingerprint(), **changed}))
    return directory / ARCHIVE_FILE


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv(JARS_DIR_ENV, str(tmp_path / "jars"))
    return tmp_path / "jars"


def test_a_current_archive_is_added_to_the_driver_jvm_options(cache):
    archive = recorded(cache)
    conf = with_class_archive({JAVA: "-Duser.timezone=UTC", "spark.master": "local[2]"})
    assert conf == {JAVA: f"-Duser.timezone=UTC -XX:SharedArchiveFile={archive}", "spark.master": "local[2]"}


@pytest.mark.parametrize("changed", [{"pyspark": "3.5.0"}, {"java_release": 'JAVA_VERSION="21"'},
                                     {"delta": "io.delta:delta-spark_2.13:3.0.0"},
                                     {"pyspark_jars": "2 jars, 10 bytes, newest 0"}])  # reinstalled: new files
def test_an_archive_recorded_with_another_jvm_pyspark_or_delta_is_not_used(cache, changed):
    recorded(cache, **changed)
    assert current_archive() is None
    assert with_class_archive({JAVA: "-Duser.timezone=UTC"}) == {JAVA: "-Duser.timezone=UTC"}


@pytest.mark.parametrize("conf", [
    {JAVA: "-Xshare:off"},                                   # the user turned sharing off
    {JAVA: "-XX:SharedArchiveFile=/elsewhere/app.jsa"},      # ... or chose an archive
    {JAVA: "", "spark.driver.extraClassPath": "/opt/hadoop-aws.jar"},  # a class path HotSpot would refuse
])
def test_jvm_options_or_a_class_path_that_decide_otherwise_are_left_as_they_are(cache, conf):
    recorded(cache)
    assert with_class_archive(conf) == conf


def test_no_archive_no_option(cache):
    assert with_class_archive({JAVA: "-Duser.timezone=UTC"}) == {JAVA: "-Duser.timezone=UTC"}


def test_a_failed_recording_keeps_the_old_archive_and_a_good_one_replaces_it(cache):
    archive = recorded(cache)
    with pytest.raises(RuntimeError, match="recording the JVM class archive failed"):
        record_archive([sys.executable, "-c", "import sys; print('no JVM here'); sys.exit(3)"])
    assert current_archive() == archive and archive.read_bytes() == b"archive"
    writes = "import sys; open(sys.argv[-1], 'wb').write(b'new classes')"
    assert record_archive([sys.executable, "-c", writes]) == archive
    assert current_archive() == archive and archive.read_bytes() == b"new classes"
    assert sorted(p.name for p in cache.iterdir()) == sorted([ARCHIVE_FILE, FINGERPRINT_FILE])  # none left behind


CLASSES_FROM = """
import sys
from normalization_core.runtime.spark import build_spark_session
spark = build_spark_session({"master": "local[1]", "spark.driver.extraJavaOptions": sys.argv[1]})
spark.range(3).write.format("delta").save(sys.argv[2])
print(spark.read.format("delta").load(sys.argv[2]).count())
spark.stop()
"""
OFFLINE = shutil.which("unshare") is not None and os.geteuid() == 0
"""A new network namespace with only loopback (`unshare -n`): a driver that needs no network starts in it."""

RECORD = """
import sys
from pathlib import Path
from normalization_core.runtime.spark import recording_session
with recording_session({"master": "local[1]"}, Path(sys.argv[-1])) as spark:
    spark.range(3).count()
"""


def loaded_from_archive(tmp_path: Path, classes: list[str], java_options: str = "",
                        offline: bool = False) -> dict[str, bool]:
    """Start a fresh driver JVM as lakenorm does (`offline`: without any network), write a Delta table and read
    it back; which of `classes` it mapped."""
    log = tmp_path / "classes.log"
    java_options = f"{java_options} -Xlog:class+load=info:file={log}"
    command = [sys.executable, "-c", CLASSES_FROM, java_options, str(tmp_path / "t")]
    if offline:
        command = ["unshare", "-n", "sh", "-c", 'ip link set lo up && SPARK_LOCAL_IP=127.0.0.1 exec "$@"', "sh",
                   *command]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip().splitlines()[-1] == "3", done.stderr[-2000:]
    lines = log.read_text().splitlines()
    return {c: any(f" {c} source: shared objects file" in line for line in lines) for c in classes}


@pytest.mark.slow
def test_the_archive_make_recorded_is_current_and_a_new_driver_maps_spark_and_delta_from_it_without_any_network(
        tmp_path, monkeypatch):
    """The driver also starts and writes Delta in a network namespace with only loopback (where the machine
    allows one: root and `unshare`): the jars and the archive are all local, nothing is resolved at run time."""
    monkeypatch.delenv(JARS_DIR_ENV, raising=False)
    assert current_archive() == jars_dir() / ARCHIVE_FILE, "make records it: python -m lakenorm_app.record_classes"
    mapped = loaded_from_archive(tmp_path, ["org.apache.spark.SparkContext", "org.apache.spark.sql.delta.DeltaLog",
                                            "org.apache.spark.sql.delta.OptimisticTransactionImpl"], offline=OFFLINE)
    assert mapped == dict.fromkeys(mapped, True)


@pytest.mark.slow
def test_a_recording_session_writes_an_archive_that_a_later_driver_starts_from(tmp_path):
    archive = record_archive([sys.executable, "-c", RECORD], tmp_path / "recorded")
    assert current_archive(tmp_path / "recorded") == archive and archive.stat().st_size > 10 * 2**20
    mapped = loaded_from_archive(tmp_path, ["org.apache.spark.SparkContext", "org.apache.spark.sql.delta.DeltaLog"],
                                 f"-XX:SharedArchiveFile={archive}")
    assert mapped == {"org.apache.spark.SparkContext": True,
                      "org.apache.spark.sql.delta.DeltaLog": False}  # the recorded run wrote no Delta table
