"""A pass over some streams of a load (normalize_loads(streams=)): registry rule, dlt's _dlt_loads, shared files."""
from __future__ import annotations

import pytest

from lakenorm_app.samples import SampleSpec, write_catalog, write_sample_packages
from normalization_core.configuration.config import parse_config
from normalization_core.io.delta import is_delta_table, read_table
from normalization_core.passes.normalize import normalize_loads


def dlt_shop(tmp_path, warehouse: str):
    return parse_config({"warehouse": warehouse, "sources": [
        {"name": "shop", "landing": "landing", "catalog": "catalog.json", "convention": "dlt"}]}, base_dir=tmp_path)


def table(spark, config, name: str) -> list:
    df = read_table(spark, config.table_path("shop", name))
    return sorted(df.select([c for c in df.columns if not c.endswith(("normalized_at", "inserted_at"))]).collect(),
                  key=repr)


@pytest.mark.slow
def test_streams_one_by_one_from_shared_airbyte_files_equal_a_full_pass(spark, tmp_path):
    (tmp_path / "landing").mkdir()
    write_catalog(tmp_path / "catalog.json")
    load_id, = write_sample_packages(tmp_path / "landing", SampleSpec(packages=1, orders=4, customers=2, events=3,
                                                                      fmt="airbyte"))
    some, full = dlt_shop(tmp_path, "wh_some"), dlt_shop(tmp_path, "wh_full")

    nothing, = normalize_loads(spark, some, "shop", [load_id], streams=["no_such_stream"])
    assert nothing.streams == {} and not is_delta_table(spark, some.table_path("shop", "_dlt_stream_loads"))

    orders, = normalize_loads(spark, some, "shop", [load_id], streams=["orders"])
    assert set(orders.streams) == {"orders"} and orders.streams["orders"].raw_lines == 4
    assert not is_delta_table(spark, some.table_path("shop", "_dlt_raw_events"))  # its lines were dropped
    assert not is_delta_table(spark, some.table_path("shop", "_dlt_loads"))  # the load is not complete yet
    assert [tuple(r) for r in read_table(spark, some.table_path("shop", "_dlt_stream_loads"))
            .select("load_id", "stream").collect()] == [(load_id, "orders")]

    normalize_loads(spark, some, "shop", [load_id], streams=["customers", "events"])
    normalize_loads(spark, full, "shop", [load_id])
    for name in ("_dlt_loads", "_dlt_stream_loads", "_dlt_raw_orders", "_dlt_raw_events", "orders", "events",
                 "customers", "orders__line_items"):
        assert table(spark, some, name) == table(spark, full, name), name
    assert len(table(spark, some, "_dlt_loads")) == 1
