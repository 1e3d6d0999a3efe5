"""Input-kind plumbing without Spark (SPEC §2.4): load IDs from producer names, kinds by name, file names."""
from __future__ import annotations

import pytest

from normalization_core.configuration.config import INPUT_KINDS
from normalization_core.inputs import get_input
from normalization_core.inputs.airbyte_destination import file_epoch, record_version
from normalization_core.inputs.base import valid_load_id
from normalization_core.inputs.ledger import ledger_table
from normalization_core.io.load_packages import LOAD_ID_PATTERN


@pytest.mark.parametrize("text, load_id", [
    ("101", "101"), ("tap-shop 2024-06-01", "tap-shop_2024-06-01"), ("1717200000.123456", "1717200000.123456"),
    ("..hidden", "hidden"), ("ünï", "n_"), ("x" * 300, None)])
def test_producer_names_become_valid_load_ids(text, load_id):
    made = valid_load_id(text)
    assert LOAD_ID_PATTERN.match(made)
    if load_id is not None:
        assert made == load_id
    else:
        assert len(made) == 128 and made != valid_load_id("x" * 301)


def test_every_configured_kind_has_a_plug_in():
    assert {get_input(kind).name for kind in INPUT_KINDS} == set(INPUT_KINDS)


@pytest.mark.parametrize("name, epoch", [
    ("2024_06_01_1717200000000_0.jsonl.gz", 1717200000000), ("2024_06_01_1717200000_3.jsonl", 1717200000),
    ("part-0.jsonl", None)])
def test_airbyte_file_epoch(name, epoch):
    assert file_epoch(name) == epoch


def test_airbyte_record_versions():
    assert record_version({"_airbyte_raw_id": "x", "id": 1}) == "airbyte_v2"
    assert record_version({"_airbyte_ab_id": "x", "_airbyte_data": {}}) == "airbyte_v1"
    assert record_version({"id": 1}) is None


def test_ledger_named_like_the_registry():
    assert [ledger_table(t) for t in ("_norm_loads", "_dlt_loads", "_airbyte_loads")] == [
        "_norm_files", "_dlt_files", "_airbyte_files"]
