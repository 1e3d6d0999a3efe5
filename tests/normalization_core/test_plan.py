"""A stream's output tables and where a source's tables live, asked of one place (`plan`, `source_tables`)."""
from __future__ import annotations

from lakenorm_app.samples import write_catalog
from normalization_core.configuration.config import parse_config
from normalization_core.plans.source_tables import SourceTables
from normalization_core.plans.stream_plans import history_table, output_tables, stream_plans


def sample_tables(tmp_path, convention: str) -> SourceTables:
    write_catalog(tmp_path / "catalog.json")
    (tmp_path / "landing").mkdir()
    config = parse_config({"warehouse": "wh", "sources": [{"name": "shop", "landing": "landing",
                                                           "catalog": "catalog.json", "convention": convention}]},
                          base_dir=tmp_path)
    return SourceTables.of(config, "shop")


def test_a_dedup_stream_writes_its_history_first_then_current_then_children(tmp_path):
    tables = sample_tables(tmp_path, "native")
    plans = stream_plans(tables.source)
    assert output_tables(plans["orders"], tables.names) == [
        "orders_scd", "orders", "orders__line_items", "orders__tags", "orders__line_items__discounts"]
    assert history_table(plans["orders"], tables.names) == "orders_scd"
    assert output_tables(plans["events"], tables.names) == plans["events"].tables == ["events"]
    assert history_table(plans["events"], tables.names) is None


def test_source_tables_name_the_paths_of_the_convention(tmp_path):
    native, dlt = sample_tables(tmp_path / "n", "native"), sample_tables(tmp_path / "d", "dlt")
    root = f"{tmp_path / 'n' / 'wh'}/shop"
    assert native.path("orders") == f"{root}/orders"
    assert native.raw_path("orders") == f"{root}/_norm_raw_orders"
    assert (native.registry_path, native.versions_path, native.quarantine_path) == (
        f"{root}/_norm_loads", f"{root}/_norm_versions", f"{root}/_norm_quarantine")
    assert dlt.registry_path.endswith("/shop/_dlt_stream_loads") and dlt.loads_path.endswith("/shop/_dlt_loads")
    assert dlt.raw_table("orders") == "_dlt_raw_orders"
    assert native.stored_tables() == []
