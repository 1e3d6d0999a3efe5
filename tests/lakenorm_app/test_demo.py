"""`lakenorm demo`: sample packages through the sensor and its runs into a persistent local instance."""
from __future__ import annotations

import dagster as dg
import pytest

from lakenorm_app.cli import main
from lakenorm_app.demo import run_demo
from lakenorm_app.samples import SampleSpec
from normalization_core.io.delta import read_table


@pytest.mark.slow
def test_demo_leaves_tables_and_an_instance_showing_the_materialized_partitions(spark, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "elsewhere"))
    assert run_demo(tmp_path / "demo", SampleSpec(packages=2, orders=20, customers=5, events=10)) == 0
    out = capsys.readouterr().out
    assert out.count(": success") == 2
    for table, rows in (("_norm_raw_orders", 40), ("_norm_raw_customers", 10), ("_norm_raw_events", 20)):
        assert read_table(spark, str(tmp_path / "demo/warehouse/shop" / table)).count() == rows
        assert f"shop.{table}" in out
    assert (tmp_path / "demo/dagster_home/dagster.yaml").read_text() == open("dagster.yaml").read()

    instance = dg.DagsterInstance.from_config(str(tmp_path / "demo/dagster_home"))
    load_ids = instance.get_dynamic_partitions("shop_load_ids")
    assert len(load_ids) == 2
    runs = instance.get_runs(dg.RunsFilter(job_name="shop_normalize"))
    assert len(runs) == 2 and {r.tags["dagster/run_key"] for r in runs} == set(load_ids)
    for key in ("_norm_raw_orders", "_norm_raw_customers", "_norm_raw_events"):
        materialized = instance.get_materialized_partitions(dg.AssetKey(["shop", key]))
        assert materialized == set(load_ids)
    for table, rows in (("_norm_loads", 6), ("_norm_versions", 3)):  # observed after the runs, as the UI shows
        observed = instance.fetch_observations(dg.AssetKey(["shop", table]), limit=1).records
        assert observed and observed[0].asset_observation.metadata["dagster/row_count"].value == rows, table

    assert main(["demo", "--root", str(tmp_path / "demo"), "--packages", "2"]) == 0  # again: nothing new
    assert "no new load packages" in capsys.readouterr().out


def test_land_only_adds_just_the_missing_packages_and_runs_nothing(tmp_path, capsys):
    root = tmp_path / "demo"
    assert main(["demo", "--root", str(root), "--packages", "2", "--land-only"]) == 0
    landing = root / "landing/shop"
    first = files(landing)
    assert main(["demo", "--root", str(root), "--packages", "3", "--land-only"]) == 0
    assert "landed 1 new package(s)" in capsys.readouterr().out
    assert len([p for p in landing.iterdir()]) == 3 and not list(landing.parent.glob(".staging-*"))
    assert {path: mtime for path, mtime in files(landing).items() if path in first} == first  # untouched
    assert not (root / "dagster_home").exists() and not (root / "warehouse").exists()


def files(folder) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}
