"""The load registry read for some load IDs alone equals the same rows of a whole read."""
from __future__ import annotations

from datetime import datetime, timezone

from normalization_core import columns as C
from normalization_core.io.registry import LoadRecord, normalized_streams, record_loads, registered_streams


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
