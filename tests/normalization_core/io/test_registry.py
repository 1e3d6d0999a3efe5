"""The load registry read for some load IDs alone equals the same rows of a whole read."""
from __future__ import annotations

from datetime import datetime, timezone

from normalization_core import columns as C
from normalization_core.io.registry import (
    LoadRecord,
    logged_registry,
    normalized_streams,
    record_loads,
    registered_streams,
)


def test_a_read_by_load_ids_equals_a_full_read_of_those_loads(spark, tmp_path):
    path = str(tmp_path / "_norm_loads")
    now = datetime.now(timezone.utc)
    rows = [("L1", "orders", C.STATUS_NORMALIZED), ("L1", "events", C.STATUS_NORMALIZED),
            ("L2", "orders", "failed"), ("L2", "events", C.STATUS_NORMALIZED), ("L3", "orders", C.STATUS_NORMALIZED)]
    record_loads(spark, path, ["L1", "L2", "L3"], [LoadRecord("shop", s, i, now, now, st) for i, s, st in rows])
    whole = {load_id: set(streams) for load_id, streams in normalized_streams(spark, path).items()}
    assert whole == {"L1": {"orders", "events"}, "L2": {"events"}, "L3": {"orders"}}

    assert registered_streams(spark, path, ["L1", "L2", "L3"]) == whole
    assert registered_streams(spark, path, ["L3", "L9"]) == {"L3": whole["L3"]}
    assert registered_streams(spark, path, []) == {}
    assert registered_streams(spark, str(tmp_path / "missing"), ["L1"]) == {}
    assert logged_registry(path) == whole  # read without Spark


def test_the_landed_streams_are_the_registrys_and_those_of_the_packages_not_registered(spark, tmp_path):
    """Loading the code location reads no manifest of a registered load: L1's is broken and not read."""
    from normalization_core.configuration.config import parse_config
    from normalization_core.inputs import get_input

    (tmp_path / "landing" / "L1").mkdir(parents=True)
    (tmp_path / "landing" / "L1" / "_manifest.json").write_text("{not json")
    (tmp_path / "landing" / "L4" / "customers").mkdir(parents=True)
    (tmp_path / "landing" / "L4" / "customers" / "part.jsonl").write_text('{"id": 1}\n')
    (tmp_path / "landing" / "L4" / "_manifest.json").write_text(
        '{"load_id": "L4", "created_at": "2024-06-01T00:00:00Z", "source": "shop", "format": "records", '
        '"streams": {"customers": {"files": ["customers/part.jsonl"]}}}')
    config = parse_config({"warehouse": "wh", "sources": [{"name": "shop", "landing": "landing"}]}, base_dir=tmp_path)
    source = config.source("shop")
    kind = get_input("packages")
    assert kind.landed_streams(config, source) == {"customers"}  # no registry yet: every manifest read
    now = datetime.now(timezone.utc)
    record_loads(spark, config.table_path("shop", "_norm_loads"), ["L1"],
                 [LoadRecord("shop", s, "L1", now, now, C.STATUS_NORMALIZED) for s in ("orders", "events")])
    assert kind.landed_streams(config, source) == {"orders", "events", "customers"}
