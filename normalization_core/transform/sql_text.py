"""How names and texts reach Spark: the one quoting function for identifiers, and the expressions written as SQL.

Every identifier that comes from data or configuration (a column, a table path, a schema) reaches Spark through
`column_name` (`naming/quoting.py`: backticks, a backtick doubled), also as a Column (`col`): `F.col("a.b")` is a struct access and
`F.col("a`b")` a syntax error, `col("a.b")` the column named `a.b`. `tests/normalization_core/test_quoted_names.py`
scans the library for names that reach Spark any other way.

Classic PySpark builds a Column with a Py4J round trip per function, operator and literal (`F.struct` of three
literals is ten, `isin` of three strings seventeen): typing a stream of hundreds of columns made hundreds of
thousands of them, most of a small load's driver time. `F.expr` of any size is three (Spark Connect builds
either locally)."""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from pyspark.sql import Column
from pyspark.sql import functions as F

from normalization_core.naming.quoting import column_name, field_name  # noqa: F401 (the quoting, re-exported)


def string_literal(text: str) -> str:
    """`text` as a SQL string literal (Spark unescapes backslashes in literals)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def col(name: str) -> Column:
    """The column named `name`, whatever it holds (dots, backticks, spaces)."""
    return F.col(column_name(name))


def cols(names: Iterable[str]) -> list[Column]:
    """`col` of each name, for `select` and the like (which read a string as `F.col` does)."""
    return [col(name) for name in names]


def table_ref(path: str) -> str:
    """The SQL name of the Delta table at `path`."""
    return f"delta.{column_name(path)}"


def in_list(name: str, values: Sequence[str]) -> str:
    """`<name> IN (...)` with the values as SQL string literals."""
    return f"{column_name(name)} IN ({', '.join(string_literal(v) for v in values)})"


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
