"""A Singer tap built with Meltano's Singer SDK (the library most taps use), run as a tap is run:
`python sdk_tap.py --config config.json > messages.jsonl`. Its records come from the config's JSON file."""
from __future__ import annotations

import json
from decimal import Decimal
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


class Payments(Stream):
    """Amounts a double cannot hold, read as decimals (as a tap reading a PostgreSQL `numeric` has them)."""
    name = "payments"
    primary_keys = ["id"]
    schema = th.PropertiesList(
        th.Property("id", th.IntegerType, required=True),
        th.Property("amount", th.NumberType),
        th.Property("big", th.IntegerType),
    ).to_dict()

    def get_records(self, context):
        yield from json.loads(Path(self.config["payments_file"]).read_text(encoding="utf-8"), parse_float=Decimal)


class TapShop(Tap):
    name = "tap-shop"
    config_jsonschema = th.PropertiesList(th.Property("records_file", th.StringType, required=True),
                                          th.Property("payments_file", th.StringType)).to_dict()

    def discover_streams(self):
        return [Users(self), *([Payments(self)] if self.config.get("payments_file") else [])]


if __name__ == "__main__":
    TapShop.cli()
