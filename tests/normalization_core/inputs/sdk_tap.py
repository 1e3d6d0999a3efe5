"""A Singer tap built with Meltano's Singer SDK (the library most taps use), run as a tap is run:
`python sdk_tap.py --config config.json > messages.jsonl`. Its records come from the config's JSON file."""
from __future__ import annotations

import json
from pathlib import Path

from singer_sdk import Stream, Tap
from singer_sdk import typing as th


class Users(Stream):
    name = "users"
    primary_keys = ["id"]
    replication_key = "updated_at"
    schema = th.PropertiesList(
        th.Property("id", th.IntegerType, required=True),
        th.Property("name", th.StringType),
        th.Property("updated_at", th.DateTimeType),
        th.Property("tags", th.ArrayType(th.StringType)),
        th.Property("address", th.ObjectType(th.Property("city", th.StringType))),
    ).to_dict()

    def get_records(self, context):
        yield from json.loads(Path(self.config["records_file"]).read_text(encoding="utf-8"))


class TapShop(Tap):
    name = "tap-shop"
    config_jsonschema = th.PropertiesList(th.Property("records_file", th.StringType, required=True)).to_dict()

    def discover_streams(self):
        return [Users(self)]


if __name__ == "__main__":
    TapShop.cli()
