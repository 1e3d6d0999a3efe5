"""What a local driver JVM prints: errors only (a successful run prints only lakenorm's own lines).

Spark's default log4j profile prints start-up notes and WARN lines (some with stack traces) on every run;
lakenorm's profile (`log4j2.properties`) keeps errors. The JVM itself prints one line before any logging
starts, for the module Spark's launcher always adds (`jdk.incubator.vector`): the gateway's stderr is read
through a filter that drops exactly that line and passes on everything else.
"""
from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path

LOG_CONFIG = Path(__file__).with_name("log4j2.properties")
_START_UP_NOTES = ("WARNING: Using incubator modules: jdk.incubator.vector",)


def quiet_logging_option(java_options: str) -> str:
    """The driver's JVM options with lakenorm's log4j profile, unless they name a profile of their own."""
    if "log4j2.configurationFile" in java_options or "log4j.configuration" in java_options:
        return java_options
    return f"{java_options} -Dlog4j2.configurationFile={LOG_CONFIG.as_uri()}"


def launch_filtered_gateway(conf: Mapping[str, str]) -> None:
    """Start this process's driver JVM (classic Spark, before its first session) with its stderr filtered."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    started = SparkContext._gateway is not None  # type: ignore[attr-defined]
    if started or "spark.remote" in conf or "PYSPARK_GATEWAY_PORT" in os.environ:  # (a gateway given to us)
        return
    spark_conf = SparkConf(loadDefaults=False).setAll(list(conf.items()))
    gateway = launch_gateway(spark_conf, popen_kwargs={"stderr": subprocess.PIPE})
    threading.Thread(target=_forward, args=(gateway.proc.stderr,), daemon=True, name="jvm-stderr").start()
    SparkContext._gateway = gateway  # type: ignore[attr-defined]
    SparkContext._jvm = gateway.jvm  # type: ignore[attr-defined]


def _forward(stream) -> None:
    for raw in iter(stream.readline, b""):
        line = raw.decode("utf-8", "replace")
        if line.rstrip("\n") not in _START_UP_NOTES:
            sys.stderr.write(line)
            sys.stderr.flush()
