"""The library speaks only what Spark Connect carries: the DataFrame API and SQL.

No `sparkContext`, JVM handles (`_jvm`, `_jsparkSession`, `_jdf`, ...), Py4J, RDDs, or Delta's JVM-backed
`delta.tables` API outside the session start-up modules, which start a classic local driver and skip those
calls for a Spark Connect session. The source is parsed (comments and docstrings may name these freely).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("normalization_core", "pipeline_assets")
SESSION_START_UP = {"normalization_core/runtime/spark.py", "normalization_core/runtime/class_archive.py",
                    "normalization_core/runtime/jvm_output.py"}
"""Modules that start sessions: they may call classic-only APIs, each guarded by `runtime.connect.is_connect`."""

CLASSIC_ATTRIBUTES = {"sparkContext", "_sc", "_jsc", "_jvm", "_gateway", "_jsparkSession", "_jdf", "_jconf",
                      "_jwrite", "_jreader", "_jseq", "rdd", "getNumPartitions",
                      "forPath", "forName", "isDeltaTable"}  # the last three: delta.tables.DeltaTable's
CLASSIC_NAMES = {"SparkContext", "JavaObject", "RDD"}
CLASSIC_MODULES = ("py4j", "delta.tables", "pyspark.rdd", "pyspark.context", "pyspark.java_gateway")
PYSPARK_CLASSIC_IMPORTS = {"SparkContext", "RDD", "rdd", "context", "java_gateway"}


def classic_uses(source: str) -> list[str]:
    """`line: what` for each classic-only API the source uses (attributes, names, imports, `getattr` strings)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Attribute) and node.attr in CLASSIC_ATTRIBUTES:
            found.append(f"{line}: .{node.attr}")
        elif isinstance(node, ast.Name) and node.id in CLASSIC_NAMES:
            found.append(f"{line}: {node.id}")
        elif isinstance(node, ast.Import):
            found += [f"{line}: import {a.name}" for a in node.names if a.name.startswith(CLASSIC_MODULES)]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            names = {a.name for a in node.names}
            if module.startswith(CLASSIC_MODULES) or (module.startswith("pyspark") and names & PYSPARK_CLASSIC_IMPORTS):
                found.append(f"{line}: from {module} import {', '.join(sorted(names))}")
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) in {"getattr", "hasattr", "setattr"}:
            found += [f"{line}: {node.func.id}(..., {a.value!r})" for a in node.args[1:2]  # type: ignore[attr-defined]
                      if isinstance(a, ast.Constant) and a.value in CLASSIC_ATTRIBUTES]
    return found


def library_modules() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py"))


def test_the_library_uses_no_classic_only_spark_api_outside_session_start_up():
    offenders = {}
    for path in library_modules():
        relative = path.relative_to(ROOT).as_posix()
        uses = classic_uses(path.read_text(encoding="utf-8"))
        if uses and relative not in SESSION_START_UP:
            offenders[relative] = uses
    assert offenders == {}, "classic-only Spark APIs (not in Spark Connect):\n" + "\n".join(
        f"  {module} {use}" for module, uses in offenders.items() for use in uses)


def test_the_session_start_up_modules_exist_and_guard_their_classic_calls():
    """The allow-list names real modules (a renamed one would leave the scan blind to nothing, and allow nothing),
    each of which skips its classic calls for Spark Connect: by the session (`is_connect`) or, before there is
    one, by the configuration (`spark.remote`)."""
    for relative in SESSION_START_UP:
        source = (ROOT / relative).read_text(encoding="utf-8")
        assert "is_connect(" in source or '"spark.remote" in conf' in source, relative


@pytest.mark.parametrize("snippet", [
    "spark.sparkContext.setLogLevel('ERROR')",
    "jvm = spark._jvm",
    "spark._jsparkSession.sessionState()",
    "df._jdf.queryExecution()",
    "n = df.rdd.getNumPartitions()",
    "from delta.tables import DeltaTable",
    "import delta.tables",
    "from pyspark import SparkContext",
    "from py4j.protocol import Py4JJavaError",
    "sc = getattr(spark, 'sparkContext')",
    "DeltaTable.forPath(spark, path)",
])
def test_the_scan_finds_each_classic_only_api(snippet):
    assert classic_uses(snippet)


def test_the_scan_passes_what_spark_connect_carries():
    source = ('"""Not `sparkContext`, not `delta.tables`."""\n'  # docstrings and comments may name them
              "# spark._jvm is not used here\n"
              "spark.sql(f'MERGE INTO delta.`{path}` AS t USING v AS s ON t.k = s.k WHEN NOT MATCHED THEN INSERT *')\n"
              "rows = spark.read.format('delta').load(path).schema\n"
              "from deltalake import DeltaTable\n"  # delta-rs: no JVM
              "version = DeltaTable(path).version()\n"
              "spark.conf.get('spark.sql.files.maxPartitionBytes')\n")
    assert classic_uses(source) == []
