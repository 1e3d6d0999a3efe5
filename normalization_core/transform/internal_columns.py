"""Names of the columns the transforms hold intermediate values in: none of them reaches a table.

Each starts with `# ` (a hash and a space): no convention's name holds a space (`direct` keeps a key's `#`, not
its spaces), so none can meet a data or system column, whatever the keys. (The columns of classified lines, which
the input kinds produce and the raw table is built from, are `raw`'s.)
"""
from __future__ import annotations

# A record's parse (`parse`, `rows`)
RECORD = "# record"
"""A record read from its VARIANT: its top-level object as a positional struct (NULL for a record read
from the tree)."""
TREE = "# tree"
"""A cleanly read record as nested positional structs (`rows.tree_parser`)."""
CLEAN = "# clean"
"""The record is in `TREE` (else in `RECORD`)."""
TREE_PARSE = "# parse"
"""Spark's JSON reader's parse of a record, before it is known to be clean."""
CORRUPT_RECORD = "# corrupt"
"""The field of the tree that Spark's JSON reader fills with a record it could not convert."""
REPAIRED = "#repaired"
"""The record's text was repaired before it was parsed (bytes not UTF-8, lone surrogate escapes): a value holding
U+FFFD records a change."""

# Typed rows (`nesting`)
ROW, ELEMENT, INDEX, KEY = "# row", "# element", "# index", "# key"
PARENT, ROOT, META = "# parent", "# root", "# meta"
CHANGE_PREFIX, TEXT_PREFIX, OBJECT_PREFIX, KIND_PREFIX, VARIANT_PREFIX = "# c", "# t", "# o", "# v", "# j"
"""Numbered columns of the typing projections: a change, a scalar's text, a nested object cast once, the value
kind of a path read once and the VARIANT it is read from."""

RECORD_BESIDE_KEY = "# keyed"
"""A record kept aside while its own root row key is typed (`nesting`, child tables)."""

# History of `append_dedup` streams (`scd`, `dispositions.append_dedup`)
RECORD_HASH = "# record_hash"
"""sha256 of the record's canonical JSON."""
DELETE = "# delete"
"""Merge source flag: true marks a target row to delete."""
RECOMPUTED = "# recomputed"
"""A key-range rewrite's row that the load recomputed (true) or kept as the table held it (false); not written."""
CURSOR, CDC_UPDATED, CDC_POS, RANK = "# cursor", "# cdc_updated", "# cdc_pos", "# rank"
KEY_PART_PREFIX = "# k"
"""Numbered parts of the unique key a join compares."""
VERSION = "# version"
"""The row key of the history row a parsed record is."""
APPENDED = "# appended"
"""An incoming version (true) or a history row it is appended to (`scd.appended_history`); not written."""

# Observed value kinds (`observed_kinds`, `not_null`)
PATH, VALUE, VALUE_KIND, EXTRACTED_AT = "# path", "# value", "# kind", "# extracted_at"

# Counters (`counts`, `discard`)
NULLED_CHANGES = "# nulled"
DISCARDED, PARENT_DISCARDED = "# discarded", "# parent_discarded"
DISCARDED_VALUES = "# discarded_values"
"""Values a contract discards from a row (`discard`)."""
TABLE_NAME = "# table"
"""The table a counter row counts (`discard.counted_discards`)."""
