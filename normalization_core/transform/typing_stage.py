"""The typing stage of a table's rows: the columns of the kinds and typing projections and, in order, the changes
the meta projection gathers (`nesting` builds one per table and projects it)."""
from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql import Column
from pyspark.sql import functions as F

from normalization_core.schema.model import ColumnSchema
from normalization_core.transform.casts import SCALAR_LOGICAL_TYPES, cast_changes, cast_scalar, json_text, type_value
from normalization_core.transform.changes import replaced
from normalization_core.transform.internal_columns import CHANGE_PREFIX, KIND_PREFIX, REPAIRED, TEXT_PREFIX, VARIANT_PREFIX
from normalization_core.transform.kinds import value_kind
from normalization_core.transform.sql_text import col, is_in
from normalization_core.transform.text_repair import REPLACEMENT

_NUMBERS = ("bigint", "double", "decimal")


@dataclass
class TypingStage:
    """Columns of the kinds and typing projections and, in order, the changes the meta projection gathers."""

    values: list[Column] = field(default_factory=list)
    hidden: list[Column] = field(default_factory=list)
    changes: list[Column] = field(default_factory=list)
    variants: list[Column] = field(default_factory=list)
    kinds: list[Column] = field(default_factory=list)
    kind_names: dict[tuple[str, ...], str] = field(default_factory=dict)

    def kind_at(self, path: tuple[str, ...], variant: Column) -> str:
        """The name of the value kind of the row's VARIANT at `path`, a column of the kinds projection: computed
        once for every column of the path (an inferred column, its variant columns, the uncovered kinds'
        check), from the VARIANT projected before it, so that no typing expression repeats either."""
        if path not in self.kind_names:
            number = len(self.kind_names)
            self.kind_names[path] = name = f"{KIND_PREFIX}{number}"
            self.variants.append(variant.alias(f"{VARIANT_PREFIX}{number}"))
            self.kinds.append(value_kind(f"{VARIANT_PREFIX}{number}").alias(name))
        return self.kind_names[path]

    def add_change(self, change: Column) -> None:
        name = f"{CHANGE_PREFIX}{len(self.hidden)}"
        self.hidden.append(change.alias(name))
        self.changes.append(col(name))

    def add_value(self, column: ColumnSchema, source: Column, where: str, given: Column | None = None,
                  path: tuple[str, ...] = (), typed_already: bool = False) -> None:
        """A typed data column; a scalar's failure is checked later against references to both texts.
        `given`: the typed value where it is not NULL (the text is NULL there); `path`: the source's in the row;
        `typed_already`: the source is a value of the column's type that nothing can have changed (a number or
        boolean of the tree, which Spark's JSON reader read without a failure and without losing digits)."""
        if typed_already:
            self.values.append(source.alias(column["name"]))
            return
        if "accepts" in column:
            self._add_inferred(column, source, where, path)
            return
        if column["logical_type"] not in SCALAR_LOGICAL_TYPES:
            typed = type_value(source, column["logical_type"], where, column.get("variants"))
            self.values.append(typed.value.alias(column["name"]))
            for change in typed.changes:
                self.add_change(change)
            self.add_replaced(where, column)
            return
        text = f"{TEXT_PREFIX}{len(self.hidden)}"
        self.hidden.append(source.alias(text))
        typed = cast_scalar(source, column["logical_type"])
        self.values.append((typed if given is None else F.coalesce(given, typed)).alias(column["name"]))
        self.changes += cast_changes(col(text), col(column["name"]), column["logical_type"], where)
        if column["logical_type"] == "string":
            self.add_replaced(where, column)

    def add_replaced(self, where: str, column: ColumnSchema) -> None:
        """TRUNCATED where the typed text of a repaired record's value holds U+FFFD (`text_repair`): characters no
        table can hold were replaced (so is a U+FFFD the producer wrote in such a record)."""
        value = col(column["name"])
        text = value if column["logical_type"] in ("string", "json") else F.to_json(value)
        self.changes.append(replaced(where, F.col(REPAIRED) & text.contains(REPLACEMENT)))

    def _add_inferred(self, column: ColumnSchema, source: Column, where: str, path: tuple[str, ...]) -> None:
        """An inferred column (SPEC §5.2) takes a VARIANT value only when its kind is accepted; a value of
        another kind goes to a variant column of the same path, with no change recorded."""
        kind = self.kind_at(path, source)
        takes = is_in(kind, column["accepts"])
        if column["logical_type"] == "json":
            self.values.append(F.when(takes, json_text(source)).alias(column["name"]))
            self.add_replaced(where, column)
            return
        if column["logical_type"] == "timestamp" and "bigint" in column["accepts"]:  # dlt's `timestamp` detection
            epoch = is_in(kind, _NUMBERS)
            self.add_value(_plain(column), F.when(takes & ~epoch, source.try_cast("string")), where,
                           F.when(epoch, F.timestamp_seconds(source.try_cast("double"))))
            return
        self.add_value(_plain(column), F.when(takes, source.try_cast("string")), where)


def _plain(column: ColumnSchema) -> ColumnSchema:
    """The column without its inference markers: typed from text like a catalog column."""
    return ColumnSchema(**{k: v for k, v in column.items() if k not in ("accepts", "variant_of")})
