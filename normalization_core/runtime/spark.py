"""A Delta-enabled SparkSession built from the configuration's `spark:` section.

With `runtime.class_archive` and `runtime.jvm_output`, the one place that may use what only a classic session has (`sparkContext`, the JVM
through Py4J): starting a local driver. Each such call is skipped for a Spark Connect session (`is_connect`);
the rest of the library speaks only the DataFrame API and SQL (tests/normalization_core/test_connect_api.py)."""
from __future__ import annotations

import os
import re
import socket
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path

from pyspark import SparkContext
from pyspark.errors import PySparkRuntimeError
from pyspark.sql import SparkSession
from pyspark.sql.types import StringType

from normalization_core.errors import LakenormError
from normalization_core.runtime.class_archive import DRIVER_JAVA_OPTIONS, recording_options, stop_jvm, with_class_archive
from normalization_core.runtime.connect import is_connect
from normalization_core.runtime.credentials import hadoop_credentials
from normalization_core.runtime.engine_token import client_token, token_channel
from normalization_core.runtime.jars import ensure_delta_jars, ensure_s3_jars
from normalization_core.runtime.jvm_output import launch_filtered_gateway, quiet_logging_option
from normalization_core.runtime.settings import session_settings

DELTA_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    # lakenorm builds every replaced slice from its own predicate; Delta's re-check is a wasted job.
    "spark.databricks.delta.replaceWhere.constraintCheck.enabled": "false",
}
LOCAL_FILES_CONF = {"spark.hadoop.fs.AbstractFileSystem.file.impl": "org.apache.hadoop.fs.local.RawLocalFs"}
"""Delta's log on local paths without Hadoop's checksum sidecar files (`.name.crc`): without Hadoop's native
library (pyspark ships none) each file created starts a `chmod` process and each rename two `readlink`s, for the
sidecar as for the file itself. Delta's log keeps its own checksums (`<version>.crc`). Only Hadoop's `FileContext`
(what Delta's log store writes with): the `FileSystem` of `file:` must stay checksummed, as Hadoop casts it to
`LocalFileSystem` (S3A's upload buffers on local disk did). A small load starts 170 processes instead of 290
(BENCHMARKS.md: 14b459b, 2026-11-28)."""
READABLE_FILES_CONF = {"spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS"}
"""Timestamps written as Parquet's microseconds, not Spark's default INT96, which Arrow-based readers (delta-rs,
polars) read as nanoseconds: a time before 1677 or after 2262 overflowed there (garbage or a refused table).
A session setting: sent to a Spark Connect engine too."""
BASE_CONF = {
    **READABLE_FILES_CONF,
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.extraJavaOptions": "-Duser.timezone=UTC",
    "spark.executor.extraJavaOptions": "-Duser.timezone=UTC",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    # PySpark otherwise records the Python call site of every Column operation in the JVM (a stack walk and ~4
    # JVM calls each): most of the time spent building a wide stream's typing expressions (BENCHMARKS.md).
    "spark.python.sql.dataFrameDebugging.enabled": "false",
    **LOCAL_FILES_CONF,
}
_JAVA_OPTIONS = ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions")
# A 2-core, 24 GiB machine: leave room for Dagster's processes beside the driver.
LOCAL_CONF = {
    "spark.driver.memory": "8g",
    "spark.sql.shuffle.partitions": "4",
    "spark.databricks.delta.snapshotPartitions": "2",
    # VACUUM lists a table's folder with this many tasks (default 10000): ~20 s per table on 2 cores.
    "spark.sql.sources.parallelPartitionDiscovery.parallelism": "4",
}


S3A_PREFIX = "spark.hadoop.fs.s3a."
"""Settings of Hadoop's S3A connector: a session with any of them gets the S3A jars (see `config.object_store`)."""
_HADOOP_PREFIX = "spark.hadoop."


def uses_s3a(spark_conf: Mapping[str, str]) -> bool:
    return any(key.startswith(S3A_PREFIX) for key in spark_conf)


SMALL_INPUT_BYTES = 16 * 1024 * 1024
"""Below this much input a pass runs without adaptive query execution (see `small_input_conf`)."""
SMALL_INPUT_CONF = {
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
    # Expressions evaluated as they are instead of compiled to Java: compiling (Janino, then the JIT) the
    # typed projections' large expression trees cost more CPU than evaluating them over a few thousand rows.
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",  # (see `large_rewrite_conf`)
    # Joins by shuffle within the job instead of a broadcast, which is a Spark job of its own (7 of a small load's).
    "spark.sql.autoBroadcastJoinThreshold": "-1",
}


COMPILED_REWRITE_ROWS = 10_000
"""A small pass whose key-ordered tables (an `append_dedup` stream's history and current table) hold more rows than
this compiles its expressions after all (`large_rewrite_conf`): their key-range rewrites and their compaction may
write every row again, and Delta's statistics of each written row cost ~0.1 ms interpreted (a 50,000-row history
written in 6.5-9.9 s interpreted, 2.0-3.1 s compiled). A whole small load on such a history took 0.87x the wall
time at the same CPU seconds: compiling the pass's other projections costs about what the rewrite saves, but on the
JVM's compiler threads (BENCHMARKS.md)."""


QUICK_START_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"
"""The JVM's quick compiler alone (and the code cache it then lacks): a cold small load ~15-20% shorter, a
large one 1.7x longer (BENCHMARKS.md), so only for a process that knows its input is small."""
SMALL_INPUT_COLLECTOR = "-XX:+UseParallelGC"
"""The throughput collector for a process that knows its input is small, unless the user chose one: a cold small
load used ~8% less CPU than with G1's concurrent threads (BENCHMARKS.md: 258a28c, 2026-11-28)."""
_CHOSEN_COLLECTOR = re.compile(r"-XX:\+Use\w*GC\b")


REMOTE = "remote"
"""The `spark:` key naming a Spark Connect endpoint (Spark's `spark.remote`): sessions are then clients of it."""
DEFAULT_CONNECT_PORT = 15002
"""Spark Connect's port when `sc://host` names none."""


def remote_address(remote: str) -> tuple[str, int]:
    """(host, port) of a `sc://host[:port][/;params]` address."""
    authority = remote.removeprefix("sc://").split("/", 1)[0].split(";", 1)[0]
    host, _, port = authority.partition(":")
    return host, int(port) if port else DEFAULT_CONNECT_PORT


def shown_remote(remote: str) -> str:
    """`remote` as a message shows it: the value of a `;token=` parameter left out."""
    return re.sub(r"(?i)(;\s*token=)[^;]*", r"\1(hidden)", remote)


def session_conf(spark_conf: Mapping[str, str], input_bytes: int | None = None) -> dict[str, str]:
    """The full Spark configuration: lakenorm's defaults, then the user's settings. `input_bytes`: what the
    process will read, when it knows; below `SMALL_INPUT_BYTES` its driver JVM starts at the quick compiler,
    unless the user's JVM options already choose the compiler."""
    conf = {**BASE_CONF}
    master = spark_conf.get("master", "local[2]")
    if master.startswith("local"):
        conf.update(LOCAL_CONF)
    for key, value in spark_conf.items():
        if key in _JAVA_OPTIONS:  # the user's JVM options come after lakenorm's (UTC), instead of dropping them
            conf[key] = f"{conf[key]} {value}"
        elif key.startswith("spark."):  # (not `master`, `remote`, the engine's limits)
            conf[key] = value
    driver = conf["spark.driver.extraJavaOptions"]
    small = input_bytes is not None and input_bytes < SMALL_INPUT_BYTES
    if small and not _CHOSEN_COLLECTOR.search(driver):
        driver = conf["spark.driver.extraJavaOptions"] = f"{driver} {SMALL_INPUT_COLLECTOR}"
    if small and "Tiered" not in driver:
        conf["spark.driver.extraJavaOptions"] = f"{driver} {QUICK_START_JAVA_OPTIONS}"
    elif "TieredStopAtLevel=1" in driver and "ReservedCodeCacheSize" not in driver:
        # HotSpot then reserves 48 MB for compiled code: a full cache stops the compiler (and failed a load)
        conf["spark.driver.extraJavaOptions"] = f"{driver} -XX:ReservedCodeCacheSize=240m"
    conf["spark.driver.extraJavaOptions"] = quiet_logging_option(conf["spark.driver.extraJavaOptions"])
    conf.update(DELTA_CONF)
    if "spark.jars.packages" not in conf:
        jars = ensure_delta_jars()
        extra = conf.get("spark.jars")
        conf["spark.jars"] = ",".join(jars + ([extra] if extra else []))
    if uses_s3a(conf):
        _add_s3a(conf, master)
    conf["spark.master"] = master
    return with_class_archive(conf)


def _add_s3a(conf: dict[str, str], master: str) -> None:
    """The S3A jars and the environment's AWS credentials (unless the settings name their own).

    In local mode the jars go on the driver's class path (the one JVM) instead of `spark.jars`,
    which would copy the ~690 MB AWS SDK bundle into every session's work folder. A configuration that
    already puts hadoop-aws on a class path (e.g. workers that have the jars) is left as it is.
    """
    placed = ("spark.jars", "spark.driver.extraClassPath", "spark.executor.extraClassPath")
    if not any("hadoop-aws" in conf.get(key, "") for key in placed):  # else the user placed them already
        jars = ensure_s3_jars()
        key = "spark.driver.extraClassPath" if master.startswith("local") else "spark.jars"
        conf[key] = (":" if key.endswith("ClassPath") else ",").join(filter(None, [conf.get(key), *jars]))
    if not any(k.startswith(S3A_PREFIX) and k.endswith((".access.key", ".secret.key")) for k in conf):
        conf.update({_HADOOP_PREFIX + k: v for k, v in hadoop_credentials().items()})


def build_spark_session(spark_conf: Mapping[str, str], app_name: str = "lakenorm",
                        input_bytes: int | None = None) -> SparkSession:
    """Create (or join) the process's SparkSession with Delta Lake enabled (`input_bytes`: see `session_conf`).

    Static settings (jars, memory, extensions, JVM options) apply only when this creates the JVM; a session
    that already runs is reused as it is. With `remote` in `spark_conf` the session is a Spark Connect client
    of that engine (`connect_session`): no JVM starts in this process.
    """
    if spark_conf.get(REMOTE):
        return connect_session(spark_conf)
    builder = SparkSession.builder.appName(app_name)
    conf = session_conf(spark_conf, input_bytes)
    for key, value in conf.items():
        builder = builder.config(key, value)
    launch_filtered_gateway(conf)  # (a process's first classic session: its JVM prints errors only)
    spark = builder.getOrCreate()
    if not is_connect(spark):  # a Connect server sets its own log level
        spark.sparkContext.setLogLevel("ERROR")
    if uses_s3a(conf):
        _join_s3a(spark, conf)
    return spark


CONNECT_RETRIES = {"max_retries": 5, "initial_backoff": 500, "backoff_multiplier": 2.0, "max_backoff": 4000}
"""A call the engine does not answer is tried again for ~12 s (Connect's default: 10 minutes), then fails: a run
that lost its engine says so (`runtime.engine_runs.lost_engine_errors`) instead of waiting."""


def _engine_retry_policy(host: str, port: int):
    """Connect's default policy with `CONNECT_RETRIES`, until one call has used up its retries: the engine is lost
    then, and each later call that fails while nothing answers at `host:port` fails at once. The run's cleanup
    after the loss (a cached frame unpersisted, session settings restored: one call each) took ~12 s per call, a
    lost engine ~1 min to be reported instead of ~12 s."""
    from pyspark.sql.connect.client.retries import DefaultPolicy, RetryPolicyState

    class LostEngineState(RetryPolicyState):
        def next_attempt(self, exception=None):
            wait = super().next_attempt(exception)
            if wait is None:
                policy.lost = True
            return wait

    class EnginePolicy(DefaultPolicy):
        lost = False

        def can_retry(self, exception: BaseException) -> bool:
            if self.lost:
                try:
                    socket.create_connection((host, port), timeout=1).close()
                except OSError:
                    return False
                self.lost = False  # the engine answers again: calls are retried as before
            return super().can_retry(exception)

        def to_state(self) -> RetryPolicyState:
            return LostEngineState(self)

    policy = EnginePolicy(**CONNECT_RETRIES)
    return policy


_CONNECT_MODE = "SPARK_CONNECT_MODE_ENABLED"
_CONNECT_SESSIONS: dict[str, SparkSession] = {}
"""This process's Spark Connect client session per address."""


def connect_session(spark_conf: Mapping[str, str], engine_directory: Path | None = None) -> SparkSession:
    """A Spark Connect client session of the engine at `spark_conf["remote"]` (`lakenorm engine start`).

    The server's static settings (jars, Delta's extension and catalog, memory, JVM options) are the ones it
    was started with; the user's `spark.*` settings are sent as session settings, those a server cannot
    change at run time ignored. Built from Connect's own builder: the classic builder, given `spark.remote`,
    switches the whole process to Connect mode (`SPARK_CONNECT_MODE_ENABLED`) and refuses while a classic
    session runs in it. The session presents the engine's token (`engine_token.client_token`; `engine_directory`:
    the local engine's folder, default `engine_dir()`)."""
    remote = spark_conf[REMOTE]
    host, port = remote_address(remote)
    try:
        socket.create_connection((host, port), timeout=5).close()
    except OSError as err:  # Connect's client would retry an absent server for minutes
        raise LakenormError(f"no Spark Connect engine answers at {shown_remote(remote)} ({err.strerror or err}): "
                            "start it with `lakenorm engine start`, or fix spark.remote in the configuration") from None
    try:
        from pyspark.sql.connect.session import SparkSession as ConnectSession
    except ImportError as err:
        raise LakenormError(f"a Spark Connect session needs pyspark's connect packages: {err}") from None
    if SparkContext._active_spark_context is not None:  # type: ignore[attr-defined]
        raise LakenormError(f"this process already runs a classic local Spark session: it cannot also be a client "
                            f"of {shown_remote(remote)} (pyspark's functions build either classic or Spark Connect "
                            "columns, per process); use a new process")
    # pyspark.sql.functions (F.col, ...) build Spark Connect columns only in a process in Connect mode: the
    # environment variable the classic builder sets when given `spark.remote`.
    os.environ[_CONNECT_MODE] = "1"
    _send_plain_strings()
    spark = _CONNECT_SESSIONS.get(remote)
    if spark is None or spark.is_stopped:  # (Connect's getOrCreate would return a session of any address)
        token = client_token(spark_conf, engine_directory)
        builder = ConnectSession.builder
        builder = builder.remote(remote) if token is None else builder.channelBuilder(token_channel(remote, token))
        for key, value in {**READABLE_FILES_CONF, **spark_conf}.items():
            if key.startswith("spark.") and not key.startswith(_HADOOP_PREFIX):
                builder = builder.config(key, value)
        spark = _CONNECT_SESSIONS[remote] = builder.create()
        spark.client.set_retry_policies([_engine_retry_policy(host, port)])
    if uses_s3a(spark_conf):
        _join_s3a(spark, spark_conf)
    return spark


def _send_plain_strings() -> None:
    """Spark Connect's client sends every `StringType()` with its collation spelled out (`UTF8_BINARY`); the
    4.2 server then builds an explicitly collated string type, which Delta stores in the table's schema as
    `string collate UTF8_BINARY`: a type delta-rs (lakenorm's ledger reader, the sensor, other engines) cannot
    read ("Unsupported Delta table type"). Classic Spark stores `string`. Sent without a collation, the server
    takes the plain default string type: the client's converter is wrapped to do so, once per process."""
    from pyspark.sql.connect import expressions, plan
    from pyspark.sql.connect import types as connect_types
    from pyspark.sql.connect.proto import types_pb2

    original = connect_types.pyspark_types_to_proto_types
    if getattr(original, "_lakenorm_plain_strings", False):
        return

    def to_proto(data_type):  # (nested types recurse through the module's name: this wrapper again)
        if type(data_type) is StringType and data_type.collation == "UTF8_BINARY":
            proto = types_pb2.DataType()
            proto.string.SetInParent()
            return proto
        return original(data_type)

    to_proto._lakenorm_plain_strings = True  # type: ignore[attr-defined]
    for module in (connect_types, plan, expressions):
        module.pyspark_types_to_proto_types = to_proto  # type: ignore[attr-defined]


def running_session() -> SparkSession | None:
    """The session this thread works with (the active one, else the process's default), classic or Spark
    Connect; None when there is none (then no JVM was started in this process)."""
    try:
        return SparkSession.active()
    except PySparkRuntimeError:  # NO_ACTIVE_OR_DEFAULT_SESSION
        return next((s for s in _CONNECT_SESSIONS.values() if not s.is_stopped), None)


def _join_s3a(spark: SparkSession, conf: Mapping[str, str]) -> None:
    """A session that already ran when these settings came: S3A settings apply as session settings
    (Spark copies them into the Hadoop configuration of every read and write); its jars cannot be added. A Spark
    Connect server has the jars it was started with: only the settings are sent."""
    if not is_connect(spark):
        _require_s3a_classes(spark)
    for key, value in conf.items():
        if key.startswith(S3A_PREFIX):
            spark.conf.set(key.removeprefix(_HADOOP_PREFIX), value)


def _require_s3a_classes(spark: SparkSession) -> None:
    try:
        spark.sparkContext._jvm.java.lang.Class.forName("org.apache.hadoop.fs.s3a.S3AFileSystem")  # type: ignore
    except Exception:  # noqa: BLE001 - py4j wraps the ClassNotFoundException
        raise LakenormError("this process's SparkSession was started without the S3A jars (hadoop-aws): start "
                            "it from a configuration with an s3a:// location or an object_store section") from None


@contextmanager
def spark_session(spark_conf: Mapping[str, str], app_name: str = "lakenorm",
                  input_bytes: int | None = None) -> Iterator[SparkSession]:
    """A session for a block of work, stopped afterwards only if this block started it."""
    remote = spark_conf.get(REMOTE)
    if remote:
        already_running = remote in _CONNECT_SESSIONS and not _CONNECT_SESSIONS[remote].is_stopped
    else:
        already_running = SparkSession.getActiveSession() is not None
    spark = build_spark_session(spark_conf, app_name, input_bytes)
    try:
        yield spark
    finally:
        if not already_running:
            spark.stop()


@contextmanager
def recording_session(spark_conf: Mapping[str, str], archive: Path) -> Iterator[SparkSession]:
    """A new process's session whose JVM writes the classes it loaded to `archive` when the block ends
    (`class_archive`): the block's work is what later sessions start with, already loaded."""
    spark = build_spark_session({**spark_conf, DRIVER_JAVA_OPTIONS: recording_options(archive)},
                                app_name="lakenorm-class-archive")
    if is_connect(spark):
        raise LakenormError("a class archive is recorded by a local driver started in this process, not through "
                            "a Spark Connect server")
    yield spark
    stop_jvm(spark)


def small_input_conf(spark: SparkSession, input_bytes: int | None) -> AbstractContextManager[None]:
    """For a pass over less than `SMALL_INPUT_BYTES` of files: no adaptive re-planning, 2 shuffle partitions,
    no code generation, no broadcast joins.

    Adaptive execution plans again after every stage and runs each stage as its own Spark job; for a few
    thousand records that fixed cost per job is most of a MERGE (a small load ran ~30% fewer jobs without it).
    Code generation compiles every projection before running it; a small load's JVM spent ~15% less CPU
    without it (BENCHMARKS.md). Results do not depend on these settings (tested); `None` (size unknown)
    changes nothing.
    """
    if input_bytes is None or input_bytes >= SMALL_INPUT_BYTES:
        return nullcontext()
    return session_settings(spark, SMALL_INPUT_CONF)


def large_rewrite_conf(spark: SparkSession, rewritten_rows: int) -> AbstractContextManager[None]:
    """Within `small_input_conf`, a pass that may rewrite more than `COMPILED_REWRITE_ROWS` rows of one table
    compiles its expressions again (whole-stage code generation stays off: it made no difference there)."""
    factory_mode = "spark.sql.codegen.factoryMode"
    if rewritten_rows <= COMPILED_REWRITE_ROWS or spark.conf.get(factory_mode, None) != "NO_CODEGEN":
        return nullcontext()
    return session_settings(spark, {factory_mode: "FALLBACK"})
