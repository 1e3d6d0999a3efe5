"""Two streams of a source that would write one table (SPEC §4): refused, naming both (native, dlt), or
disambiguated with Airbyte's hashed names and the collision recorded (airbyte)."""
from __future__ import annotations

import json

import pytest

from normalization_core.configuration.config import parse_config
from normalization_core.errors import ConfigError
from normalization_core.plans.source_tables import raw_table_name
from normalization_core.plans.stream_plans import stream_plans
from tests.conftest import CASES

CASES_DOC = json.loads((CASES / "collisions" / "stream_tables.json").read_text(encoding="utf-8"))["cases"]


def _catalog(case) -> dict:
    streams = []
    for name, properties in case["streams"].items():
        schema = {"type": "object", "properties": {"id": {"type": "integer"}, **properties}}
        dedup = name in case.get("dedup", [])
        streams.append({"stream": {"name": name, "json_schema": schema},
                        "destination_sync_mode": "append_dedup" if dedup else "append",
                        **({"primary_key": [["id"]], "cursor_field": ["id"]} if dedup else {})})
    return {"streams": streams}


@pytest.mark.parametrize("case", CASES_DOC, ids=lambda c: "+".join(c["streams"]))
def test_streams_writing_one_table_are_refused_or_disambiguated(tmp_path, case):
    (tmp_path / "catalog.json").write_text(json.dumps(_catalog(case)))
    (tmp_path / "landing").mkdir()
    config = parse_config({"warehouse": "wh", "sources": [{"name": "src", "landing": "landing", "catalog": "catalog.json",
                                                            "convention": case["convention"]}]}, base_dir=tmp_path)
    if case["clash"] is None:
        plans = stream_plans(config.source("src"))
        assert set(plans) == set(case["streams"])
        raw = [raw_table_name(config.source("src"), stream) for stream in case["streams"]]
        assert len({name.lower() for name in raw}) == len(raw)
        for stream, tables in case.get("tables", {}).items():
            assert plans[stream].tables == tables
            recorded = [c for c in plans[stream].schema["collisions"] if c["table"] is None]
            assert recorded and all(name in recorded[0]["resolved"].values() for name in tables if name != stream.lower())
        return
    with pytest.raises(ConfigError) as raised:
        stream_plans(config.source("src"))
    message = str(raised.value)
    assert all(repr(stream) in message for stream in case["streams"])
    assert repr(case["clash"]) in message
