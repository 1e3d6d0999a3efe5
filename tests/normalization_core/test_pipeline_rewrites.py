"""A small pass over a large key-ordered table: its writes compile their expressions again (`large_rewrite_conf`),
since a load's key-range rewrite may write every row of the table, and the history still holds every version."""
from __future__ import annotations

from lakenorm_app.samples import SampleSpec, write_catalog, write_sample_packages
from normalization_core.configuration.config import parse_config
from normalization_core.dispositions import dedup_writes
from normalization_core.io.delta import read_table
from normalization_core.passes.normalize import normalize_load
from normalization_core.runtime import spark as spark_settings

FACTORY_MODE = "spark.sql.codegen.factoryMode"


def test_a_small_pass_compiles_its_expressions_once_a_history_it_rewrites_is_large(spark, tmp_path, monkeypatch):
    """Three small packages of 20 orders (half of each load's updates of earlier orders) under a threshold of 30
    rows: the second load rewrites a 20-row history interpreted, the third a larger one compiled."""
    write_catalog(tmp_path / "catalog.json")
    ids = write_sample_packages(tmp_path / "landing", SampleSpec(packages=3, orders=20, customers=0, events=0,
                                                                 update_ratio=0.5))
    config = parse_config({"warehouse": "wh", "sources": [{"name": "shop", "landing": "landing",
                                                           "catalog": "catalog.json"}]}, base_dir=tmp_path)
    monkeypatch.setattr(spark_settings, "COMPILED_REWRITE_ROWS", 30)
    modes, rewrite = [], dedup_writes.replace_slice

    def recording_mode(session, path, *args, **kwargs):
        if path.endswith("orders_scd"):
            modes.append(session.conf.get(FACTORY_MODE))
        return rewrite(session, path, *args, **kwargs)

    monkeypatch.setattr(dedup_writes, "replace_slice", recording_mode)
    history = config.table_path("shop", "orders_scd")
    held = []
    for load_id in ids:
        normalize_load(spark, config, "shop", load_id)
        held.append(read_table(spark, history).count())

    assert held[0] == 20 and held[1] > 30  # the first load creates the history: no range to rewrite yet
    assert modes == ["NO_CODEGEN", "FALLBACK"]
    assert held[2] == 60  # every version of every order kept
    assert spark.conf.get(FACTORY_MODE, "FALLBACK") == "FALLBACK"  # the session's own setting again
