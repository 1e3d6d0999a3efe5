"""A small pass runs without adaptive execution and code generation (`io.spark.small_input_conf`): the tables are
the same as a pass with Spark's own settings. Every other test's packages are small, so this is the one that
runs the large path over the same loads."""
from __future__ import annotations

import pytest

from normalization_core.io import spark as spark_settings
from normalization_core.io.packages import discover_packages
from normalization_core.pipeline import normalize_loads
from tests.normalization_core.test_pipeline_batch import tables, warehouse


@pytest.mark.slow
def test_the_small_input_settings_do_not_change_any_table(spark, tmp_path, monkeypatch):
    small, large = warehouse(tmp_path, "wh_small"), warehouse(tmp_path, "wh_large")
    ids = [p.load_id for p in discover_packages(small.source("shop").landing, "shop").packages]
    normalize_loads(spark, small, "shop", ids)
    monkeypatch.setattr(spark_settings, "SMALL_INPUT_BYTES", 0)
    normalize_loads(spark, large, "shop", ids)
    assert spark.conf.get("spark.sql.codegen.factoryMode", "FALLBACK") == "FALLBACK"
    found = tables(spark, small)
    assert {"orders_scd", "customers", "events", "orders__line_items", "clicks"} <= set(found)
    assert tables(spark, large) == found
