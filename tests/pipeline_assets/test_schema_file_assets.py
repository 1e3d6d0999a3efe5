"""A stream known only from a `schema_file` (SPEC §5.4, §8): no catalog, nothing landed, never loaded. The code
location shows its assets from the file's tables before its first load, and loading it starts no JVM."""
from __future__ import annotations

import yaml

from normalization_core.schema import schema_document
from normalization_core.schema.inference import infer_schema

from tests.normalization_core.test_pipeline_inferred import loaded_without_a_jvm

WITH_ITEMS = {((), "object"), (("k:id",), "bigint"), (("k:items",), "array"), (("k:items", "[]"), "object"),
              (("k:items", "[]", "k:q"), "bigint")}
"""What a record `{"id": 1, "items": [{"q": 1}]}` holds: a root table and a child table `<stream>__items`."""


def write_schema_file(path, streams: list[str]) -> None:
    """A file as `lakenorm schema` prints it: one document per stream."""
    path.write_text(yaml.safe_dump_all([
        {"source": "chain", "stream": s, "version": 1, "version_hash": "h",
         "schema": schema_document(infer_schema(s, WITH_ITEMS, "dlt"))} for s in streams], sort_keys=False))


def test_streams_of_schema_files_have_their_assets_before_their_first_load(tmp_path):
    (tmp_path / "landing").mkdir()
    write_schema_file(tmp_path / "schemas.yaml", ["orders"])
    write_schema_file(tmp_path / "events.yaml", ["events"])
    (tmp_path / "lakenorm.yaml").write_text(yaml.safe_dump({"warehouse": "wh", "sources": [{
        "name": "chain", "landing": "landing", "convention": "dlt", "schema_file": "schemas.yaml",
        "streams": {"events": {"schema_file": "events.yaml", "destination_sync_mode": "append_dedup",
                               "primary_key": "id"}}}]}))

    keys = loaded_without_a_jvm(tmp_path / "lakenorm.yaml")

    assert not (tmp_path / "wh").exists()  # nothing loaded, nothing written
    assert {k for k in keys if "orders" in k or "events" in k} == {
        "chain/_dlt_raw_orders", "chain/orders", "chain/orders__items",
        "chain/_dlt_raw_events", "chain/events_scd", "chain/events", "chain/events__items"}
