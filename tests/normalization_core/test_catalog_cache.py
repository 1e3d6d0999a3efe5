"""A catalog file is read and validated once per process while it stays as it is; a changed file is
read again."""
from __future__ import annotations

import json

from normalization_core.configuration import catalog as catalog_module
from normalization_core.configuration.catalog import load_catalog


def _catalog(mode: str) -> dict:
    return {"streams": [{"stream": {"name": "events", "json_schema": {"type": "object"}},
                         "destination_sync_mode": mode}]}


def test_a_catalog_file_is_parsed_once_until_it_changes(tmp_path, monkeypatch):
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps(_catalog("append")))
    parsed = []
    parse = catalog_module.parse_catalog
    monkeypatch.setattr(catalog_module, "parse_catalog", lambda doc, where: parsed.append(where) or parse(doc, where))

    first, second = load_catalog(path), load_catalog(path)
    assert first == second and first["events"].destination_sync_mode == "append"
    assert parsed == [str(path)]
    first.clear()  # a caller's copy: the cached catalog is not changed
    assert "events" in load_catalog(path)

    path.write_text(json.dumps(_catalog("overwrite")))
    assert load_catalog(path)["events"].destination_sync_mode == "overwrite"
    assert parsed == [str(path), str(path)]
