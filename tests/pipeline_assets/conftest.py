"""A shop source whose landing folder holds the hand-written package of tests/cases/dagster/."""
from __future__ import annotations

import json

import pytest

from lakenorm_app.samples import write_catalog
from normalization_core.configuration.config import parse_config

PACKAGE_CASE = "dagster/bad_values_package.json"


def write_case_package(landing, case: dict, stream: str = "orders") -> str:
    package = landing / case["load_id"]
    package.mkdir(parents=True)
    (package / f"{stream}.jsonl").write_text("\n".join(case["lines"]) + "\n", encoding="utf-8")
    manifest = {"load_id": case["load_id"], "created_at": "2026-01-01T00:00:00Z", "source": "shop", "format": "records",
                "streams": {stream: {"files": [f"{stream}.jsonl"], "records": len(case["lines"])}}}
    (package / "_manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return case["load_id"]


@pytest.fixture
def bad_values_shop(tmp_path, load_case):
    """(config, case): orders typed as `append`, one package landed, nothing normalized yet."""
    (tmp_path / "landing").mkdir()
    write_catalog(tmp_path / "catalog.json")
    config = parse_config({"warehouse": "wh", "sources": [{
        "name": "shop", "landing": "landing", "catalog": "catalog.json",
        "streams": {"orders": {"destination_sync_mode": "append"}}}]}, base_dir=tmp_path)
    case = load_case(PACKAGE_CASE)
    write_case_package(config.source("shop").landing, case)
    return config, case
