"""The one quoting function for identifiers, as plain text (the lowest layer: the schema layer quotes the fields of
its type strings with it, `transform.sql_text` builds Spark's expressions on it)."""
from __future__ import annotations

import re

_PLAIN_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def column_name(name: str) -> str:
    """An identifier (a column, a schema, a table, a table's path), quoted: the one quoting function."""
    return "`" + name.replace("`", "``") + "`"


def field_name(name: str) -> str:
    """A struct field's name in a type string (`struct<name:type>`): as Spark prints a plain one, else quoted."""
    return name if _PLAIN_FIELD.fullmatch(name) else column_name(name)
