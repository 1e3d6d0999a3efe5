"""A Singer source's code location loads without a JVM (SPEC §8), its streams' assets found in its files."""
from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import yaml

from tests.code_location import loaded_without_a_jvm

SINGER_RUN = Path(__file__).parents[1] / "cases" / "inputs" / "singer_run.jsonl"


def test_definitions_of_a_singer_source_load_without_a_jvm(tmp_path):
    landing = tmp_path / "landing"
    landing.mkdir()
    shutil.copy(SINGER_RUN, landing / "tap-shop 2024-06-01.jsonl")  # `orders`' SCHEMA after a RECORD of it
    filler = "".join('{"type": "RECORD", "stream": "users", "record": {"id": %d}}\n' % i for i in range(200_000))
    late = '{"type": "SCHEMA", "stream": "refunds", "schema": {"type": "object", "properties": {"id": ' \
           '{"type": "integer"}}}, "key_properties": ["id"]}\n'
    with gzip.open(landing / "tap-shop 2024-06-02.jsonl.gz", "wt") as run:  # `refunds`' SCHEMA after 8 MB
        run.write(SINGER_RUN.read_text().splitlines(keepends=True)[0] + filler + late)
    config = tmp_path / "lakenorm.yaml"
    config.write_text(yaml.safe_dump({"warehouse": "wh", "sources": [
        {"name": "shop", "landing": "landing", "input": "singer", "settle_seconds": 0}]}))

    keys = loaded_without_a_jvm(config)
    assert {k for k in keys if not k.startswith("shop/_norm_") or k.startswith("shop/_norm_raw")} == {
        "shop/_norm_raw_users", "shop/users", "shop/users_scd",  # key_properties: append_dedup
        "shop/_norm_raw_orders", "shop/orders",
        "shop/_norm_raw_refunds", "shop/refunds", "shop/refunds_scd"}
