"""Parsing each record once for all of its stream's typed tables (see `rows` for the two parses).

`parse_records` reads raw rows. `with_parsed_records` parses the records of every catalog stream while
the package's lines are classified, so that the cached lines already hold them and no table re-reads
the JSON text.
"""
from __future__ import annotations

import hashlib
from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from normalization_core.columns import SystemNames
from normalization_core.schema.model import StreamSchema, root_table
from normalization_core.transform.kinds import keep_big_integers
from normalization_core.transform.raw import ERROR, KIND, READABLE, STREAM, TEXT
from normalization_core.transform.rows import TreeParser, row_level, tree_parser
from normalization_core.transform.typing import cast_object

RECORD = "#record"
"""Column holding a record read from its VARIANT: its top-level object as a positional struct (NULL for
a record read from the tree). Internal columns start with `#`, which no normalized name contains."""
TREE = "#tree"
"""Column holding a cleanly read record as nested positional structs (`rows.tree_parser`)."""
CLEAN = "#clean"
"""Column: the record is in `TREE` (else in `RECORD`)."""
_PARSE = "#parse"
PARSED = ("#parsed_tree", "#parsed_record", "#parsed_clean")
"""Columns of raw rows carrying their records' parse (`TREE`, `RECORD`, `CLEAN`); rows whose records were
all read cleanly may carry the first alone, and their tables then hold no VARIANT path at all."""


def record_variant(names: SystemNames, stream_schema: StreamSchema) -> Column:
    """The record as a VARIANT, parsed from the raw JSON text (inferred streams with integers beyond 38
    digits quoted, so that they stay exact as text)."""
    if stream_schema.get("inferred"):
        return F.try_parse_json(keep_big_integers(F.col(names.data)))
    return F.try_parse_json(F.col(names.data))


def parse_records(raw_df: DataFrame, names: SystemNames, stream_schema: StreamSchema,
                  carry: Sequence[str | Column] = ()) -> DataFrame:
    """Raw rows that are JSON objects: ids, position and the record, parsed once.

    A catalog stream's record is read by Spark's JSON reader into `TREE` (the fast path). A record it cannot
    read cleanly, or that is no VARIANT (duplicate keys: `READABLE` is false when the rows carry it), is
    cast from its VARIANT into `RECORD` instead, and `CLEAN` says which. Inferred streams always take the
    VARIANT. Rows that carry their parse (`parsed_columns`, from `with_parsed_records`) are not parsed again.
    `carry` adds raw columns or expressions over the raw rows.
    """
    upstream = [names.upstream_changes] if names.upstream_changes in raw_df.columns else []
    keep = [names.raw_id, names.extracted_at, names.load_id, names.file, names.line, *upstream, *carry]
    valid = raw_df.where(F.col(names.error).isNull())
    parser = tree_parser(stream_schema)
    if parser is None:
        level = row_level(stream_schema, root_table(stream_schema))
        return valid.select(*keep, cast_object(record_variant(names, stream_schema), level.fields()).alias(RECORD))
    if PARSED[0] in raw_df.columns:  # (without `RECORD`: every record was read cleanly)
        carried = [(c, n) for c, n in zip(PARSED, (TREE, RECORD, CLEAN)) if c in raw_df.columns]
        return valid.select(*keep, *[F.col(c).alias(n) for c, n in carried])
    readable = F.col(READABLE) if READABLE in raw_df.columns else record_variant(names, stream_schema).isNotNull()
    parsed = valid.select(*keep, F.col(names.data), readable.alias(READABLE),
                          parser.parse(F.col(names.data)).alias(_PARSE))
    kept = [c for c in parsed.columns if c not in (names.data, READABLE, _PARSE)]
    return parsed.select(*kept, *_record_columns(parser, stream_schema, F.col(names.data), F.lit(True)))


def parsed_columns(stream: str) -> tuple[str, str, str]:
    """The columns of classified lines holding a stream's parse (`with_parsed_records`), as in `PARSED`
    (named by a digest of the stream name, which may hold dots or backticks)."""
    tag = hashlib.sha256(stream.encode("utf-8")).hexdigest()[:16]
    return f"#tree_{tag}", f"#record_{tag}", f"#clean_{tag}"


def with_parsed_records(lines: DataFrame, schemas: dict[str, StreamSchema]) -> DataFrame:
    """Classified lines plus, for each stream the tree can read, its valid records parsed (`parsed_columns`)."""
    parsers = {s: p for s, p in ((s, tree_parser(schema)) for s, schema in schemas.items()) if p is not None}
    is_record = {s: (F.col(KIND) == "record") & (F.col(STREAM) == s) & F.col(ERROR).isNull() for s in parsers}
    parses = {s: f"{_PARSE}_{i}" for i, s in enumerate(parsers)}
    trees = [F.when(is_record[s], p.parse(F.col(TEXT))).alias(parses[s]) for s, p in parsers.items()]
    lines = lines.select("*", *trees)
    columns = []
    for stream, parser in parsers.items():
        parsed = _record_columns(parser, schemas[stream], F.col(TEXT), is_record[stream], parses[stream])
        columns += [c.alias(name) for c, name in zip(parsed, parsed_columns(stream))]
    return lines.select(*[c for c in lines.columns if not c.startswith(_PARSE)], *columns)


def read_from_variant(lines: DataFrame, streams: Sequence[str]) -> Column:
    """A valid record line that its stream's tree (`with_parsed_records`) did not read cleanly: to count them."""
    unclean = F.lit(False)
    for stream in streams:
        clean = parsed_columns(stream)[2]
        if clean in lines.columns:
            unclean = F.when(F.col(STREAM) == stream, ~F.col(clean)).otherwise(unclean)
    return (F.col(KIND) == "record") & F.col(ERROR).isNull() & unclean


def _record_columns(parser: TreeParser, schema: StreamSchema, text: Column, is_record: Column,
                    parse: str = _PARSE) -> list[Column]:
    """`TREE`, `RECORD` and `CLEAN` from the tree's parse and `READABLE`: the VARIANT is parsed and cast only
    for a record the tree did not read cleanly."""
    clean = F.col(READABLE) & parser.is_clean(F.col(parse))
    level = row_level(schema, root_table(schema))
    record = F.when(is_record & ~clean, cast_object(F.try_parse_json(text), level.fields()))
    return [F.when(clean, F.col(parse)).alias(TREE), record.alias(RECORD), clean.alias(CLEAN)]
