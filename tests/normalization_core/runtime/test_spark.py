"""The Delta runtime: session settings and the offline jar cache (a driver started without any network:
test_class_archive.py)."""
from __future__ import annotations

import os
import re

import pytest

from normalization_core.runtime.jars import DELTA_COORDINATE, _shipped_by_pyspark, cached_jars
from normalization_core.runtime.spark import (
    COMPILED_REWRITE_ROWS,
    QUICK_START_JAVA_OPTIONS,
    SMALL_INPUT_BYTES,
    SMALL_INPUT_COLLECTOR,
    large_rewrite_conf,
    session_conf,
    small_input_conf,
)


def test_session_conf_enables_delta_utc_and_local_defaults_user_settings_win():
    conf = session_conf({"master": "local[2]", "spark.driver.memory": "2g"})
    assert conf["spark.master"] == "local[2]"
    assert conf["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"
    assert conf["spark.sql.session.timeZone"] == "UTC"
    assert conf["spark.driver.memory"] == "2g"
    assert "delta-spark_4.2_2.13-4.4.0.jar" in conf["spark.jars"]
    assert "spark.jars.packages" not in conf
    jvm = session_conf({"spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1"})["spark.driver.extraJavaOptions"]
    # the quick compiler gets the code cache it lacks; then the class archive (its own test)
    assert jvm.startswith("-Duser.timezone=UTC -XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m")
    cluster = session_conf({"master": "spark://host:7077"})
    assert "spark.driver.memory" not in cluster
    checksummed = session_conf({"spark.hadoop.fs.AbstractFileSystem.file.impl": "org.apache.hadoop.fs.local.LocalFs"})
    assert checksummed["spark.hadoop.fs.AbstractFileSystem.file.impl"] == "org.apache.hadoop.fs.local.LocalFs"


def test_delta_logs_on_local_paths_are_written_without_checksum_sidecars_and_hadoop_still_gets_its_local_fs(spark):
    """Delta's log store writes through Hadoop's `FileContext`: lakenorm's sessions give it the raw local file system,
    whose files have no `.name.crc` sidecar (each a `chmod` and two `readlink` process starts more without Hadoop's
    native library). Hadoop's own `FileSystem.getLocal` (S3A's disk buffers) still gets the `LocalFileSystem` it
    casts to."""
    jvm, hadoop = spark.sparkContext._jvm, spark.sparkContext._jsc.hadoopConfiguration()
    context = jvm.org.apache.hadoop.fs.FileContext.getFileContext(jvm.java.net.URI("file:///"), hadoop)
    assert context.getDefaultFileSystem().getClass().getName() == "org.apache.hadoop.fs.local.RawLocalFs"
    local = jvm.org.apache.hadoop.fs.FileSystem.getLocal(hadoop)  # a cast: raised with the raw file system there
    assert jvm.java.lang.Class.forName("org.apache.hadoop.fs.LocalFileSystem").isInstance(local)


@pytest.mark.parametrize(("user_options", "input_bytes", "quick", "collector"), [
    ("", SMALL_INPUT_BYTES - 1, True, True),
    ("-Xmx2g", 0, True, True),
    ("", SMALL_INPUT_BYTES, False, False),                  # a large input: C2's faster code pays off
    ("", None, False, False),                               # unknown (pending loads, a long-lived session)
    ("-XX:TieredStopAtLevel=4", 10, False, True),           # the user chose the compiler
    ("-XX:-TieredCompilation", 10, False, True),
    ("-XX:+UseG1GC", 10, True, False),                      # the user chose the collector
    ("-XX:+UseSerialGC -XX:-TieredCompilation", 10, False, False),
])
def test_a_process_with_a_small_input_starts_its_driver_at_the_quick_compiler_and_throughput_collector(
        user_options, input_bytes, quick, collector):
    settings = {"spark.driver.extraJavaOptions": user_options} if user_options else {}
    driver = session_conf(settings, input_bytes)["spark.driver.extraJavaOptions"]
    assert (QUICK_START_JAVA_OPTIONS in driver) is quick
    assert (SMALL_INPUT_COLLECTOR in driver) is collector
    assert len(re.findall(r"-XX:\+Use\w*GC", driver)) == (1 if collector or "GC" in user_options else 0)
    assert driver.startswith(f"-Duser.timezone=UTC {user_options}".strip())
    executor = session_conf(settings, input_bytes)["spark.executor.extraJavaOptions"]
    assert QUICK_START_JAVA_OPTIONS not in executor and SMALL_INPUT_COLLECTOR not in executor


def test_a_small_input_runs_without_adaptive_execution_or_codegen_and_the_settings_come_back(spark):
    def settings():
        return tuple(spark.conf.get(key, None) for key in (
            "spark.sql.adaptive.enabled", "spark.sql.shuffle.partitions", "spark.sql.codegen.factoryMode"))

    before = settings()
    with small_input_conf(spark, SMALL_INPUT_BYTES - 1):
        assert settings() == ("false", "2", "NO_CODEGEN")
        numbers = spark.range(10)
        assert numbers.groupBy((numbers.id % 3).alias("k")).count().count() == 3
    assert settings() == before
    for unknown_or_large in (None, SMALL_INPUT_BYTES):
        with small_input_conf(spark, unknown_or_large):
            assert settings() == before


def test_a_small_pass_that_may_rewrite_a_large_table_compiles_its_expressions_again(spark):
    def mode():
        return spark.conf.get("spark.sql.codegen.factoryMode", None), spark.conf.get("spark.sql.codegen.wholeStage")

    with small_input_conf(spark, SMALL_INPUT_BYTES - 1):
        with large_rewrite_conf(spark, COMPILED_REWRITE_ROWS):
            assert mode() == ("NO_CODEGEN", "false")
        with large_rewrite_conf(spark, COMPILED_REWRITE_ROWS + 1):
            assert mode() == ("FALLBACK", "false")
        assert mode() == ("NO_CODEGEN", "false")
    outside = mode()
    with large_rewrite_conf(spark, COMPILED_REWRITE_ROWS + 1):  # a large input's pass compiles anyway
        assert mode() == outside


def test_jar_cache_keeps_only_what_pyspark_lacks():
    jars = [os.path.basename(j) for j in cached_jars()]
    assert f"io.delta_delta-spark_4.2_2.13-{DELTA_COORDINATE.rsplit(':', 1)[1]}.jar" in jars
    assert any(j.startswith("io.delta_delta-storage-") for j in jars)
    assert not any("jackson-databind" in j or "hadoop-client" in j for j in jars)
    assert _shipped_by_pyspark("org.apache.parquet_parquet-hadoop-1.16.0.jar")
    assert not _shipped_by_pyspark("io.delta_delta-storage-4.4.0.jar")


def test_s3a_settings_bring_the_s3a_jars_and_the_environments_credentials(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "key-from-env")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret-from-env")
    plain = session_conf({"master": "local[2]"})
    assert "hadoop-aws" not in plain["spark.jars"] and "spark.driver.extraClassPath" not in plain
    assert not any(k.startswith("spark.hadoop.fs.s3a.") for k in plain)
    local = session_conf({"master": "local[2]", "spark.hadoop.fs.s3a.endpoint": "http://127.0.0.1:9000"})
    assert "org.apache.hadoop_hadoop-aws-" in local["spark.driver.extraClassPath"]  # one JVM: no copy per session
    assert "hadoop-aws" not in local["spark.jars"]
    assert (local["spark.hadoop.fs.s3a.access.key"], local["spark.hadoop.fs.s3a.secret.key"]) == (
        "key-from-env", "secret-from-env")
    cluster = session_conf({"master": "spark://host:7077", "spark.hadoop.fs.s3a.access.key": "own",
                            "spark.hadoop.fs.s3a.secret.key": "own-secret"})
    assert "org.apache.hadoop_hadoop-aws-" in cluster["spark.jars"]  # executors on other hosts need them
    assert cluster["spark.hadoop.fs.s3a.access.key"] == "own"
