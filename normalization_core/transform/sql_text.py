"""Expressions written as Spark SQL text, for the ones a wide stream builds per column.

Classic PySpark builds a Column with a Py4J round trip per function, operator and literal (`F.struct` of three
literals is ten, `isin` of three strings seventeen): typing a stream of hundreds of columns made hundreds of
thousands of them, most of a small load's driver time. `F.expr` of any size is three (Spark Connect builds
either locally)."""
from __future__ import annotations

from collections.abc import Iterable, Mapping

from pyspark.sql import Column
from pyspark.sql import functions as F


def string_literal(text: str) -> str:
    """`text` as a SQL string literal (Spark unescapes backslashes in literals)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def column_name(name: str) -> str:
    """A column reference, quoted."""
    return "`" + name.replace("`", "``") + "`"


def text_map(table: Mapping[str, str]) -> str:
    """A `map<string, string>` literal."""
    return "map(" + ", ".join(f"{string_literal(k)}, {string_literal(v)}" for k, v in table.items()) + ")"


def is_in(name: str, values: Iterable[str]) -> Column:
    """The named column holds one of the texts `values` (NULL where it is NULL)."""
    texts = ", ".join(string_literal(v) for v in values)
    return F.expr(f"{column_name(name)} IN ({texts})") if texts else F.lit(False)


def not_in(name: str, values: Iterable[str]) -> Column:
    """The named column holds a text, none of `values`."""
    texts = ", ".join(string_literal(v) for v in values)
    return F.expr(f"{column_name(name)} IS NOT NULL" + (f" AND {column_name(name)} NOT IN ({texts})" if texts else ""))


def text_struct(fields: Mapping[str, str]) -> Column:
    """A struct of text literals, one per field (its fields not nullable, as `F.struct` of literals)."""
    pairs = ", ".join(f"{string_literal(k)}, {string_literal(v)}" for k, v in fields.items())
    return F.expr(f"named_struct({pairs})")
