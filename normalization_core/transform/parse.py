"""Parsing each record once for all of its stream's typed tables (see `rows` for the two parses).

`parse_records` reads raw rows and says which parse it made (`ParsedRecords.path`). `with_parsed_records`
parses the records of every catalog stream while the package's lines are classified, so that the cached
lines already hold them and no table re-reads the JSON text: `stream_records` hands a stream's raw rows on
with that parse (`RawRecords`).
"""
from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import Enum

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from normalization_core.columns import SystemNames
from normalization_core.schema.model import StreamSchema, root_table
from normalization_core.transform.casts import cast_object, lost_digits
from normalization_core.transform.internal_columns import CLEAN, RECORD, REPAIRED, TREE, TREE_PARSE
from normalization_core.transform.kinds import exact_number_text, inference_text
from normalization_core.transform.raw import (
    ERROR,
    KIND,
    READABLE,
    STREAM,
    TEXT,
    raw_rows,
    repaired_line,
    repaired_record,
    typed_line,
    variant_holds,
)
from normalization_core.transform.rows import TreeParser, row_level, tree_parser
from normalization_core.transform.sql_text import col
from normalization_core.transform.text_repair import without_lone_surrogates


_LONG_NUMBER = r'(?<![\w".])(?=[\d.]{16})\d[\d.]*(?:[eE][+-]?\d+)?'
"""A number of 16 characters or more (text inside a string may match too, which costs only a check)."""
_HUGE_EXPONENT = r"\d[eE][+-]?(?:30[89]|3[1-9]\d|[4-9]\d\d|\d{4,})(?![\w.])"
"""A number at or past a double's range (`1e400`, `1e-400`), however short."""
_MAY_BE_INEXACT = r"\d[\d.]{15}|\d[eE][+-]?\d{3}"
"""What text holding either number above must hold: one scan of the text, which most records fail."""


class ParsePath(Enum):
    """How a stream's records were read, and so which parse columns its parsed rows hold."""

    TREE = "tree"
    """Every record from its tree (`TREE` alone): the rows hold no VARIANT path at all."""
    VARIANT = "variant"
    """Every record cast from its VARIANT (`RECORD` alone): streams the tree cannot read (`tree_parser`)."""
    BOTH = "both"
    """Each record from its tree where Spark's JSON reader read it cleanly, else from its VARIANT: `TREE`,
    `RECORD`, and `CLEAN` saying which."""

    @property
    def columns(self) -> tuple[str, ...]:
        return {ParsePath.TREE: (TREE,), ParsePath.VARIANT: (RECORD,), ParsePath.BOTH: (TREE, RECORD, CLEAN)}[self]


@dataclass(frozen=True)
class RawRecords:
    """A stream's raw rows, carrying the parse of their records made with the classified lines, if any."""

    rows: DataFrame
    carried: ParsePath | None = None
    """The parse columns the rows carry (`stream_records`); None: their records are parsed per stream."""


@dataclass(frozen=True)
class ParsedRecords:
    """A stream's valid raw rows with each record parsed once (`parse_records`): what every table is built from."""

    rows: DataFrame
    """Raw ids, extracted at, load ID, file, line (upstream changes), `REPAIRED`, the carried columns and
    `path.columns`."""
    path: ParsePath
    with_lines: bool = False
    """The parse was made with the classified lines, and is cached with them."""

    def persist(self, level: StorageLevel = StorageLevel.MEMORY_AND_DISK) -> ParsedRecords:
        return replace(self, rows=self.rows.persist(level))

    def unpersist(self) -> None:
        self.rows.unpersist()

    def with_rows(self, rows: DataFrame) -> ParsedRecords:
        """The same parse over `rows`: these rows filtered or joined, their columns kept."""
        return replace(self, rows=rows)


def record_variant(names: SystemNames, stream_schema: StreamSchema) -> Column:
    """The record as a VARIANT, parsed from the raw JSON text (`record_text`)."""
    return F.try_parse_json(record_text(F.col(names.data), stream_schema))


def record_text(text: Column, stream_schema: StreamSchema) -> Column:
    """The record's JSON text as its VARIANT is parsed from: inferred streams' with the kinds dlt infers
    (`inference_text`), catalog streams' with every number kept as written (`exact_number_text`); a lone
    surrogate escape read as U+FFFD."""
    return (inference_text if stream_schema.get("inferred") else exact_number_text)(without_lone_surrogates(text))


def parse_records(raw: DataFrame | RawRecords, names: SystemNames, stream_schema: StreamSchema,
                  carry: Sequence[str | Column] = ()) -> ParsedRecords:
    """Raw rows that are JSON objects (`typed_line`): ids, position, whether the record was repaired (`REPAIRED`)
    and the record, parsed once.

    A catalog stream's record is read by Spark's JSON reader into `TREE` (the fast path). A record it cannot
    read cleanly, or that is no VARIANT (duplicate keys), is cast from its VARIANT into `RECORD` instead, and
    `CLEAN` says which. Inferred streams always take the VARIANT. Rows that carry their parse (`RawRecords`
    from `stream_records`) are not parsed again. `carry` adds raw columns or expressions over the raw rows.
    """
    records = raw if isinstance(raw, RawRecords) else RawRecords(raw)
    raw_df = records.rows
    upstream = [names.upstream_changes] if names.upstream_changes in raw_df.columns else []
    repaired = F.col(REPAIRED) if REPAIRED in raw_df.columns else repaired_record(raw_df, names)
    keep = [names.raw_id, names.extracted_at, names.load_id, names.file, names.line, *upstream,
            repaired.alias(REPAIRED), *carry]
    valid = raw_df.where(typed_line(names))
    parser = tree_parser(stream_schema)
    if parser is None:
        level = row_level(stream_schema, root_table(stream_schema))
        record = cast_object(record_variant(names, stream_schema), level.fields()).alias(RECORD)
        return ParsedRecords(valid.select(*keep, record), ParsePath.VARIANT)
    if records.carried is not None:
        return ParsedRecords(valid.select(*keep, *records.carried.columns), records.carried, with_lines=True)
    readable = variant_holds(F.col(names.data))  # (quoting numbers changes no record's validity)
    parsed = valid.select(*keep, F.col(names.data), readable.alias(READABLE),
                          parser.parse(without_lone_surrogates(F.col(names.data))).alias(TREE_PARSE))
    kept = [c for c in parsed.columns if c not in (names.data, READABLE, TREE_PARSE)]
    rows = parsed.select(*kept, *_record_columns(parser, stream_schema, F.col(names.data), F.lit(True)))
    return ParsedRecords(rows, ParsePath.BOTH)


def parsed_columns(stream: str) -> tuple[str, str, str]:
    """The columns of classified lines holding a stream's parse (`with_parsed_records`): `TREE`, `RECORD` and
    `CLEAN` of that stream (named by a digest of the stream name, which may hold dots or backticks)."""
    tag = hashlib.sha256(stream.encode("utf-8")).hexdigest()[:16]
    return f"{TREE}_{tag}", f"{RECORD}_{tag}", f"{CLEAN}_{tag}"


def stream_records(stream_lines: DataFrame, names: SystemNames, stream: str, all_clean: bool) -> RawRecords:
    """The classified lines of one stream (from `with_parsed_records`) -> its raw rows, with the parse made with
    the lines (`all_clean`: every record was read from its tree, so the tree alone is carried)."""
    columns = dict(zip((TREE, RECORD, CLEAN), parsed_columns(stream)))
    if columns[TREE] not in stream_lines.columns:  # a stream the tree cannot read is parsed per stream
        return RawRecords(raw_rows(stream_lines, names))
    path = ParsePath.TREE if all_clean else ParsePath.BOTH
    carried = [col(REPAIRED), *[col(columns[c]).alias(c) for c in path.columns]]
    return RawRecords(raw_rows(stream_lines, names, carried), path)


def with_parsed_records(lines: DataFrame, schemas: dict[str, StreamSchema]) -> DataFrame:
    """Classified lines plus, for each stream the tree can read, its valid records parsed (`parsed_columns`), and
    whether each line's record was repaired (`REPAIRED`: found once, not again by each table)."""
    parsers = {s: p for s, p in ((s, tree_parser(schema)) for s, schema in schemas.items()) if p is not None}
    is_record = {s: (F.col(KIND) == "record") & (F.col(STREAM) == s) & F.col(ERROR).isNull() for s in parsers}
    parses = {s: f"{TREE_PARSE}_{i}" for i, s in enumerate(parsers)}
    text = without_lone_surrogates(F.col(TEXT))
    trees = [F.when(is_record[s], p.parse(text)).alias(parses[s]) for s, p in parsers.items()]
    lines = lines.select("*", *trees, *([repaired_line(lines).alias(REPAIRED)] if parsers else []))
    columns = []
    for stream, parser in parsers.items():
        parsed = _record_columns(parser, schemas[stream], F.col(TEXT), is_record[stream], parses[stream])
        columns += [c.alias(name) for c, name in zip(parsed, parsed_columns(stream))]
    return lines.select(*[c for c in lines.columns if not c.startswith(TREE_PARSE)], *columns)


def read_from_variant(lines: DataFrame, streams: Sequence[str]) -> Column:
    """A valid record line that its stream's tree (`with_parsed_records`) did not read cleanly: to count them."""
    unclean: Column | None = None  # one flat CASE over the streams, not a nest as deep as their number
    for stream in streams:
        clean = parsed_columns(stream)[2]
        if clean in lines.columns:
            branch = (F.col(STREAM) == stream, ~col(clean))
            unclean = F.when(*branch) if unclean is None else unclean.when(*branch)
    unclean = F.lit(False) if unclean is None else unclean.otherwise(F.lit(False))
    return (F.col(KIND) == "record") & F.col(ERROR).isNull() & unclean


def _record_columns(parser: TreeParser, schema: StreamSchema, text: Column, is_record: Column,
                    parse: str = TREE_PARSE) -> list[Column]:
    """`TREE`, `RECORD` and `CLEAN` from the tree's parse and `READABLE`: the VARIANT is parsed and cast only
    for a record the tree did not read cleanly."""
    clean = F.col(READABLE) & parser.is_clean(col(parse))
    if _has_doubles(schema):
        clean = clean & ~_holds_inexact_number(text)
    level = row_level(schema, root_table(schema))
    record = F.when(is_record & ~clean, cast_object(F.try_parse_json(record_text(text, schema)), level.fields()))
    return [F.when(clean, col(parse)).alias(TREE), record.alias(RECORD), clean.alias(CLEAN)]


def _holds_inexact_number(text: Column) -> Column:
    """The record holds a number whose digits a double cannot keep. The tree reads a `double` column's value
    through a double, a VARIANT keeps it exactly (up to 38 digits), so such a record is read from its VARIANT,
    where the lost digits are seen and recorded (`casts.lost_digits`; a number a VARIANT would hold as a double
    only is read from its text there: `exact_number_text`), as is a record with a number beyond a double's range.
    A long number a double keeps (Python's `0.30000000000000004`) leaves the record on the tree. Both are checked
    on every record of a stream with `number` columns, behind one pass of a simple pattern that both need."""
    numbers = F.regexp_extract_all(text, F.lit(_LONG_NUMBER), 0)
    lost = F.exists(numbers, lambda number: lost_digits(number, number.try_cast("double")))
    return F.when(text.rlike(_MAY_BE_INEXACT), lost | text.rlike(_HUGE_EXPONENT)).otherwise(F.lit(False))


def _has_doubles(schema: StreamSchema) -> bool:
    return any(column["logical_type"] == "double" for table in schema["tables"] for column in table["columns"])
