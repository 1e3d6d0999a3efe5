"""One SparkSession for the whole test run (JVM start costs seconds); temp dirs per test."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from normalization_core.io.spark import build_spark_session

CASES = Path(__file__).parent / "cases"
TEST_SPARK_CONF = {
    "master": "local[2]",
    "spark.sql.shuffle.partitions": "2",
    "spark.driver.memory": "4g",
    "spark.ui.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
}


@pytest.fixture(scope="session")
def spark():
    session = build_spark_session(TEST_SPARK_CONF, app_name="lakenorm-tests")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def load_case():
    """Reads a JSON case file under tests/cases/."""
    return lambda relative: json.loads((CASES / relative).read_text(encoding="utf-8"))
