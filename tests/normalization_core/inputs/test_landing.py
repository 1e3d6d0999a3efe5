"""Where a source's passes keep their listing cursor: in the source's state folder, out of the tables' way; a
warehouse's cursor from before that folder is still found."""
from __future__ import annotations

import json
import time

import pytest

from normalization_core.configuration.config import parse_config
from normalization_core.inputs.landing import listed_since_last_pass
from normalization_core.inputs.package_listing import ListingCursor, read_cursor, write_cursor
from tests.normalization_core.inputs.test_package_listing import land


RECENT = time.time()
"""A full listing just ran: the next one lists from the cursor."""


def config_for(tmp_path, convention: str = "native"):
    landing = tmp_path / "landing"
    landing.mkdir(exist_ok=True)
    source = {"name": "shop", "landing": str(landing), "convention": convention}
    return parse_config({"warehouse": str(tmp_path / "wh"), "sources": [source]}, tmp_path), landing


def listed(config) -> list[str]:
    source = config.sources[0]
    listing = listed_since_last_pass(config, source, lambda packages: set())
    return [p.load_id for p in listing.discovery.packages]


@pytest.mark.parametrize(("convention", "folder"), [("native", "_norm_state"), ("dlt", "_dlt_state")])
def test_the_cursor_is_kept_in_the_state_folder_and_nothing_else_beside_the_tables(tmp_path, convention, folder):
    config, landing = config_for(tmp_path, convention)
    land(landing, "0001")
    assert listed(config) == ["0001"]
    source_folder = tmp_path / "wh" / "shop"
    assert [p.name for p in source_folder.iterdir()] == [folder]
    kept = json.loads((source_folder / folder / "listing.json").read_text())
    assert kept["after"] == "0001" and kept["open"] == ["0001"]


def test_a_cursor_at_the_earlier_place_is_read_and_the_next_one_written_in_the_state_folder(tmp_path):
    config, landing = config_for(tmp_path)
    for name in ("0001", "0002", "0003"):
        land(landing, name)
    earlier = tmp_path / "wh" / "shop" / "_norm_listing.json"
    write_cursor(earlier, ListingCursor("0002", (), full_at=RECENT))  # listed up to 0002, no full listing due
    assert listed(config) == ["0003"]
    assert read_cursor(tmp_path / "wh" / "shop" / "_norm_state" / "listing.json") == ListingCursor(
        "0003", ("0003",), full_at=RECENT)
    earlier.unlink()
    land(landing, "0004")
    assert listed(config) == ["0003", "0004"]  # from the state folder's cursor (0003 still open: not done)


def test_the_state_folders_cursor_wins_over_the_earlier_places(tmp_path):
    config, landing = config_for(tmp_path)
    for name in ("0001", "0002"):
        land(landing, name)
    write_cursor(tmp_path / "wh" / "shop" / "_norm_listing.json", ListingCursor("0000", (), full_at=RECENT))
    write_cursor(tmp_path / "wh" / "shop" / "_norm_state" / "listing.json", ListingCursor("0001", (), full_at=RECENT))
    assert listed(config) == ["0002"]
