"""Typed root and nested child tables of a stream from its raw rows (SPEC §3, §4.2, §5.1), on the executors.

Each record is parsed once (`parse.parse_records`): into its tree when Spark's JSON reader reads it cleanly,
else into a VARIANT whose object levels are cast to structs as they are read, so that a value of the wrong
kind (a string where an object is declared, a scalar among objects) is seen, NULLED and reported instead
of silently lost (`rows`). Each table is built from both kinds of rows. Child tables of any depth
`posexplode` their way down from the same parsed DataFrame.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from normalization_core.columns import SystemNames
from normalization_core.schema.model import (
    ColumnSchema,
    StreamSchema,
    TableSchema,
    child_tables,
    field_path,
    lineage,
    root_table,
)
from normalization_core.transform.casts import SCALAR_LOGICAL_TYPES, cast_object
from normalization_core.transform.changes import (
    SERIALIZATION_ERROR,
    meta_column,
    nulled,
    with_upstream_changes,
)
from normalization_core.transform.internal_columns import (
    CLEAN,
    ELEMENT,
    INDEX,
    KEY,
    META,
    OBJECT_PREFIX,
    PARENT,
    RECORD,
    RECORD_BESIDE_KEY,
    REPAIRED,
    ROOT,
    ROW,
    TREE,
)
from normalization_core.transform.keys import key128, own_row_key, row_key
from normalization_core.transform.kinds import is_present
from normalization_core.transform.parse import ParsedRecords, ParsePath
from normalization_core.transform.rows import NATIVE_TYPES, TreeReader, VariantReader, row_level
from normalization_core.transform.sql_text import col, cols, not_in
from normalization_core.transform.typing_stage import TypingStage

RECORD_FIELD = "$"
"""`field` of the change recorded when a record cannot be read as a VARIANT (duplicate keys, size)."""
RECORD_UNREADABLE = SERIALIZATION_ERROR
_ARRAY = "array<variant>"


def _by_path(parsed: ParsedRecords, build: Callable[[DataFrame, bool], DataFrame]) -> DataFrame:
    """`build(rows, tree)` over the records read from the VARIANT, plus (`CLEAN` rows) those read from the tree."""
    rows = parsed.rows
    if parsed.path is ParsePath.TREE:
        return build(rows, True)
    if parsed.path is ParsePath.VARIANT:
        return build(rows, False)
    return build(rows.where(~F.col(CLEAN)), False).unionByName(build(rows.where(F.col(CLEAN)), True))


def _record(tree: bool) -> Column:
    return F.col(TREE if tree else RECORD)


def typed_root(parsed: ParsedRecords, names: SystemNames, stream_schema: StreamSchema, table: str | None = None,
               normalized_at: Column | None = None, carry: Sequence[str] = ()) -> DataFrame:
    """The root table: typed data columns, then raw id, extracted at, load ID, row key, meta, normalized at
    (and the `carry` columns of `parsed.rows`, unchanged, last)."""
    root = root_table(stream_schema)
    if table is not None and table != root["name"]:
        raise ValueError(f"{table!r} is not the root table of stream {stream_schema['stream']!r}")
    keep = [names.raw_id, names.extracted_at, names.load_id]
    stamp = normalized_at if normalized_at is not None else F.current_timestamp()
    upstream = [names.upstream_changes] if names.upstream_changes in parsed.rows.columns else []

    def build(records: DataFrame, tree: bool) -> DataFrame:
        rows = records.select(*keep, *upstream, *carry, REPAIRED, _record(tree).alias(ROW))
        unreadable = [] if tree else [nulled(RECORD_FIELD, F.col(ROW).isNull(), RECORD_UNREADABLE)]
        typed = _type_rows(rows, stream_schema, root, [*keep, *upstream, *carry, REPAIRED], unreadable, tree)
        return typed.select(
            *cols(_data_names(root, with_row_key=False)), *keep,
            row_key(root, key128(F.col(names.raw_id))).alias(names.row_id(root)),
            with_upstream_changes(F.col(META), upstream).alias(names.meta), stamp.alias(names.normalized_at), *carry,
        )
    return _by_path(parsed, build)


def child_table(parsed: ParsedRecords, names: SystemNames, stream_schema: StreamSchema, table: str,
                root_key: str | None = None, normalized_at: Column | None = None) -> DataFrame:
    """A nested table at any depth: data columns, (raw id, extracted at,) load ID, row key, parent key,
    list index, root key, meta (, normalized at): the bracketed ones where the convention's children carry
    them (`airbyte`).

    `root_key`: a column of `parsed.rows` holding the root row's key (default: the key derived from the raw id).
    """
    chain = lineage(stream_schema, table)
    if len(chain) < 2:
        raise ValueError(f"{table!r} is the root table of stream {stream_schema['stream']!r}, not a child")
    target = chain[-1]
    in_array = target["element"] != "nested_object"
    carry = [names.raw_id, names.extracted_at, names.load_id] if names.child_record_columns else [names.load_id]
    stamp = [] if not names.child_record_columns else [
        (normalized_at if normalized_at is not None else F.current_timestamp()).alias(names.normalized_at)]

    def build(records: DataFrame, tree: bool) -> DataFrame:
        if root_key:
            rows = records.select(*carry, REPAIRED, col(root_key).alias(ROOT), _record(tree).alias(ROW))
        else:
            rows = _with_root_key(records, names, stream_schema, [*carry, REPAIRED], tree)
        rows = rows.withColumn(KEY, F.col(ROOT))
        for parent, child in zip(chain, chain[1:]):
            rows = _explode(rows, stream_schema, parent, child, [*carry, REPAIRED], tree)
        typed = _type_rows(rows, stream_schema, target, [*carry, REPAIRED, KEY, PARENT, INDEX, ROOT], tree=tree)
        return typed.select(
            *cols(_data_names(target)), *carry, F.col(KEY).alias(names.row_id(target)),
            F.col(PARENT).alias(names.parent_key(target)),
            *([F.col(INDEX).cast("bigint").alias(names.list_idx)] if in_array else []),
            F.col(ROOT).alias(names.root_id), F.col(META).alias(names.meta), *stamp,
        )
    return _by_path(parsed, build)


def typed_tables(parsed: ParsedRecords, names: SystemNames, stream_schema: StreamSchema,
                 normalized_at: Column | None = None) -> dict[str, DataFrame]:
    """Every typed table of the stream by name, root first (lazy: nothing runs here).

    Persist `parsed` (from `parse_records`) first when writing several tables, or each table's job parses again.
    """
    root, *children = stream_schema["tables"]
    tables = {root["name"]: typed_root(parsed, names, stream_schema, normalized_at=normalized_at)}
    tables.update({child["name"]: child_table(parsed, names, stream_schema, child["name"], normalized_at=normalized_at)
                   for child in children})
    return tables


def _explode(rows: DataFrame, schema: StreamSchema, parent: TableSchema, child: TableSchema,
             carry: list[str], tree: bool) -> DataFrame:
    """Rows of `parent` -> rows of `child`, one per element of its array; a null or empty array gives none.

    A `nested_object` child has one row per parent row whose value is not null, and no list index; a child
    with `flatten` levels has one row per element of its arrays of arrays, flattened, indexed in that list.
    """
    value = _array_in(schema, parent, child, F.col(ROW), tree)
    kept = cols(carry)
    if child["element"] == "nested_object":
        exploded = rows.select(*kept, F.col(ROOT), F.col(KEY).alias(PARENT),
                               F.lit(None).cast("int").alias(INDEX), value.alias(ELEMENT))
        present = F.col(ELEMENT).isNotNull() if tree else is_present(F.col(ELEMENT))
        exploded = exploded.where(present)
    else:
        exploded = rows.select(*kept, F.col(ROOT), F.col(KEY).alias(PARENT),
                               F.posexplode(_elements(value, child.get("flatten", 0), tree)).alias(INDEX, ELEMENT))
    element = F.col(ELEMENT)
    is_object = child["element"] in ("object", "nested_object") and not tree
    row = cast_object(element, row_level(schema, child).fields()) if is_object else element
    return exploded.select(*kept, F.col(ROOT), F.col(PARENT), F.col(INDEX),
                           key128(F.col(PARENT), F.lit(child["name"]), F.col(INDEX)).alias(KEY),
                           row.alias(ROW), element)


def _elements(value: Column, flatten: int, tree: bool) -> Column:
    """The array of a child's rows: the value itself (tree) or cast from its VARIANT, `flatten` levels flattened."""
    array_type = _ARRAY
    for _ in range(flatten):
        array_type = f"array<{array_type}>"
    elements = value if tree else value.try_cast(array_type)
    for _ in range(flatten):
        elements = F.flatten(elements)
    return elements


def _array_in(schema: StreamSchema, parent: TableSchema, child: TableSchema, row: Column, tree: bool) -> Column:
    """The value holding the child's array in a parent row (a `__list` table's parent row is the array)."""
    if not child["path"]:
        return row
    reader = TreeReader if tree else VariantReader
    return reader(row, row_level(schema, parent)).value_at(tuple(child["path"]))


def _data_names(table: TableSchema, with_row_key: bool = True) -> list[str]:
    return [column["name"] for column in table["columns"] if with_row_key or not column.get("sets_row_key")]


def _with_root_key(records: DataFrame, names: SystemNames, schema: StreamSchema, carry: list[str], tree: bool
                   ) -> DataFrame:
    """`carry`, the root row's key (`ROOT`) and the record (`ROW`): the key derived from the raw id, or the
    record's own, typed as the root table types it (the same typing of the same parse: the same key; Spark
    prunes the root's other typed values, which nothing reads)."""
    root = root_table(schema)
    derived = key128(F.col(names.raw_id))
    if own_row_key(root) is None:
        return records.select(*carry, derived.alias(ROOT), _record(tree).alias(ROW))
    keep = list(dict.fromkeys([names.raw_id, *carry, RECORD_BESIDE_KEY]))
    rows = records.select(*keep[:-1], _record(tree).alias(ROW), _record(tree).alias(RECORD_BESIDE_KEY))
    typed = _type_rows(rows, schema, root, keep, tree=tree)
    return typed.select(*carry, row_key(root, derived).alias(ROOT), F.col(RECORD_BESIDE_KEY).alias(ROW))


def _type_rows(rows: DataFrame, schema: StreamSchema, table: TableSchema, keep: list[str],
               changes: list[Column] | None = None, tree: bool = False) -> DataFrame:
    """Rows with `ROW` (and, in child tables, `ELEMENT`) -> data columns, `keep` and `META`.

    Up to four projections, so that Spark keeps each expensive value once: nested objects cast, the value
    kinds of inferred columns' paths, values typed, changes gathered from references to texts and typed
    values. `tree`: the rows are read from the tree, where nothing is of the wrong kind (nor inferred).
    """
    stage = TypingStage()
    for change in changes or []:
        stage.add_change(change)
    if table["element"] in ("scalar", "array"):
        _element_values(stage, table, F.col(ROW), tree)
    elif tree:
        _object_values(stage, schema, table, TreeReader(F.col(ROW), row_level(schema, table)))
    else:
        rows, reader = _with_objects(rows, schema, table, keep)
        _object_values(stage, schema, table, reader)
    if stage.kinds:
        rows = rows.select("*", *stage.variants).select("*", *stage.kinds)
    typed = rows.select(*keep, *stage.values, *stage.hidden)
    return typed.select(*keep, *cols(_data_names(table)), meta_column(stage.changes).alias(META))


def _with_objects(rows: DataFrame, schema: StreamSchema, table: TableSchema, keep: list[str]
                  ) -> tuple[DataFrame, VariantReader]:
    """Add each nested object of the row as a column; a reader that reads them from there."""
    level = row_level(schema, table)
    casting = VariantReader(F.col(ROW), level)
    objects = {path: f"{OBJECT_PREFIX}{i}" for i, path in enumerate(level.objects())}
    element = [ELEMENT] if table["kind"] == "child" else []
    rows = rows.select(*keep, ROW, *element, *[casting.object_at(p).alias(n) for p, n in objects.items()])
    return rows, VariantReader(F.col(ROW), level, {path: col(name) for path, name in objects.items()})


def _object_values(stage: TypingStage, schema: StreamSchema, table: TableSchema,
                   reader: VariantReader | TreeReader) -> None:
    """Columns of an object row, with the values of the wrong kind reported: element, objects, arrays
    (a row read from the tree has none)."""
    if not reader.tree:
        _not_objects(stage, schema, table, reader)
    placed, accepted = _structural_placements(schema, table, reader), _accepted_kinds(table)
    for column in table["columns"]:
        value = reader.value_at(tuple(column["path"]))
        path = tuple(column["path"])
        stage.add_value(column, value, field_path(table, column), path=path, typed_already=_native(column, reader.tree))
        _add_uncovered(stage, table, column, value, path, accepted, placed.get(path, ()))
    if not reader.tree:
        _not_arrays(stage, schema, table, reader)


def _not_objects(stage: TypingStage, schema: StreamSchema, table: TableSchema, reader: VariantReader) -> None:
    """NULLED changes for an element or a nested object whose value is not an object (and that no column or
    child table of the same path takes, as for an inferred key whose values differ in kind)."""
    if table["kind"] == "child":
        not_an_object = is_present(F.col(ELEMENT)) & F.col(ROW).isNull()
        stage.add_change(nulled(".".join(table["json_path"]), not_an_object))
    placed = _column_paths(table) | _child_paths(schema, table)
    for path in reader.level.objects():
        if path not in placed:
            not_an_object = is_present(reader.value_at(path)) & reader.object_at(path).isNull()
            stage.add_change(nulled(_joined(table, path), not_an_object))


def _not_arrays(stage: TypingStage, schema: StreamSchema, table: TableSchema, reader: VariantReader) -> None:
    """NULLED changes for a child table's value that is not an array (nor placed in a column or as an object)."""
    placed = _column_paths(table) | set(reader.level.objects())
    for path in _child_paths(schema, table):
        if path not in placed:  # (airbyte keeps every child's value as a JSON column: nothing is lost)
            stage.add_change(nulled(_joined(table, path), _not_an_array(reader.value_at(path))))


def _column_paths(table: TableSchema) -> set[tuple[str, ...]]:
    return {tuple(column["path"]) for column in table["columns"]}


def _child_paths(schema: StreamSchema, table: TableSchema) -> set[tuple[str, ...]]:
    return {tuple(child["path"]) for child in child_tables(schema, table["name"])}


def _element_values(stage: TypingStage, table: TableSchema, element: Column, tree: bool) -> None:
    """The `value` (or `list`) column, read from the element itself (text or VARIANT)."""
    accepted = _accepted_kinds(table)
    for column in table["columns"]:
        scalar = column["logical_type"] in SCALAR_LOGICAL_TYPES and "accepts" not in column
        text = element.try_cast("string") if scalar and not tree else element
        stage.add_value(column, text, field_path(table, column), typed_already=_native(column, tree))
        _add_uncovered(stage, table, column, element, (), accepted)
    if table["element"] == "array" and not table["columns"] and not tree:
        stage.add_change(nulled(".".join(table["json_path"]), _not_an_array(element)))


def _native(column: ColumnSchema, tree: bool) -> bool:
    """A tree's value of the column is of its type already (`rows.NATIVE_TYPES`): nothing to cast or check."""
    return tree and column["logical_type"] in NATIVE_TYPES and "accepts" not in column


def _structural_placements(schema: StreamSchema, table: TableSchema, reader: VariantReader | TreeReader
                           ) -> dict[tuple[str, ...], tuple[str, ...]]:
    """Value kinds of a column's path placed elsewhere: an object flattened, an array in a child table."""
    placed: dict[tuple[str, ...], tuple[str, ...]] = {}
    for path in reader.level.objects():
        placed[path] = ("object",)
    for path in _child_paths(schema, table):
        placed[path] = (*placed.get(path, ()), "array")
    return placed


def _add_uncovered(stage: TypingStage, table: TableSchema, column: ColumnSchema, variant: Column, path: tuple[str, ...],
                   accepted: dict[str, set[str]], placed: tuple[str, ...] = ()) -> None:
    """NULLED + change for a value no column of its path takes (a kind an evolved schema could not add)."""
    if "accepts" not in column or "variant_of" in column:
        return
    kind = stage.kind_at(path, variant)
    covered = accepted[column["name"]] | set(placed)
    stage.add_change(nulled(field_path(table, column), not_in(kind, sorted(covered))))


def _accepted_kinds(table: TableSchema) -> dict[str, set[str]]:
    """The kinds an inferred column and its variant columns take, by the column's name."""
    accepted: dict[str, set[str]] = {}
    for column in table["columns"]:
        if "accepts" in column:
            accepted.setdefault(column.get("variant_of", column["name"]), set()).update(column["accepts"])
    return accepted


def _not_an_array(variant: Column) -> Column:
    return is_present(variant) & variant.try_cast(_ARRAY).isNull()


def _joined(table: TableSchema, path: tuple[str, ...]) -> str:
    return ".".join([*table["json_path"], *path])
