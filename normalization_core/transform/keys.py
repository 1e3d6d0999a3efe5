"""The 128-bit keys lakenorm writes (raw ids, row keys, SCD keys): the first 32 hex digits of a SHA-256
of the key's parts. Tables written before hold them: an encoding never changes. A record may bring its own
row key (dlt's `_dlt_id`), which then wins."""
from __future__ import annotations

from enum import Enum

from pyspark.sql import Column
from pyspark.sql import functions as F

from normalization_core.schema.model import ColumnSchema, TableSchema
from normalization_core.transform.sql_text import col

_SEPARATOR = "\u001f"


class KeyEncoding(Enum):
    """How a key's parts become the text that is hashed."""

    SEPARATED = "separated"
    """The parts' text joined by U+001F, NULL parts left out: raw ids and the row keys of typed tables."""
    JSON_ARRAY = "json_array"
    """A JSON array of the parts' text: no two part lists share an encoding, NULL is `null`: SCD keys."""


def key128(*parts: Column, encoding: KeyEncoding = KeyEncoding.SEPARATED) -> Column:
    """128-bit hex key of `parts` (each cast to text)."""
    texts = [part.cast("string") for part in parts]
    encoded = F.concat_ws(_SEPARATOR, *texts) if encoding is KeyEncoding.SEPARATED else F.to_json(F.array(*texts))
    return F.substring(F.sha2(encoded, 256), 1, 32)


def own_row_key(table: TableSchema) -> ColumnSchema | None:
    """The column holding a record's own row key (`ColumnSchema.sets_row_key`), if the table has one."""
    return next((column for column in table["columns"] if column.get("sets_row_key")), None)


def row_key(table: TableSchema, derived: Column) -> Column:
    """A row's key: the record's own (as typed, where its text is not empty), else `derived`."""
    own = own_row_key(table)
    return derived if own is None else F.coalesce(F.nullif(col(own["name"]), F.lit("")), derived)
