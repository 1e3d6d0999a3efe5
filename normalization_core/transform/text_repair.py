"""Text no reader or writer refuses (SPEC §10): lines whose bytes are not UTF-8, lone surrogate escapes.

- A line's bytes that are not UTF-8 are replaced by U+FFFD as the line is read (`repaired_lines`), so every
  text column holds valid UTF-8 (Spark's text reader does not check it, and would write the bytes into Parquet,
  where Arrow-based readers refuse the whole file); the line's exact bytes are kept beside it (`BYTES`).
- A JSON string escape of half a UTF-16 pair with no other half (`"\\ud800"`) is valid JSON text that no
  VARIANT holds and that Spark's JSON reader turns into `?`: it is replaced by `\\ufffd` where the record is
  parsed (`without_lone_surrogates`); raw keeps the text as written.

Both are checked by a cheap test first (`is_valid_utf8`, a substring search), so a valid line costs no regex.
"""
from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

REPLACEMENT = "\ufffd"
"""U+FFFD, the character a byte sequence that is not UTF-8 or a lone surrogate escape becomes."""

_CONTINUATION = r"[\x80-\xBF]"
_VALID_UTF8_PREFIX = (
    r"^(?:[\x00-\x7F]++|[\xC2-\xDF]" + _CONTINUATION
    + r"|\xE0[\xA0-\xBF]" + _CONTINUATION + r"|[\xE1-\xEC\xEE\xEF]" + _CONTINUATION + "{2}"
    + r"|\xED[\x80-\x9F]" + _CONTINUATION + r"|\xF0[\x90-\xBF]" + _CONTINUATION + "{2}"
    + r"|[\xF1-\xF3]" + _CONTINUATION + "{3}|\\xF4[\\x80-\\x8F]" + _CONTINUATION + "{2})*+"
)
"""The longest run of well-formed UTF-8 sequences (RFC 3629) at the start of bytes read as ISO-8859-1 (one
character per byte). Every quantifier is possessive: matching never backtracks, and a megabyte line is one loop."""

_HEX = "[0-9a-fA-F]"
_REAL_ESCAPE_END = r"(?=(?:\\\\)*+(?!\\))"
"""After the reversed `u\\` of an escape: the backslash is the escape's own, not an escaped one (an even number of
backslashes precedes it in the text)."""
_HIGH_REVERSED = _HEX + "{2}[89abAB][dD]u\\\\"
_LOW_REVERSED = _HEX + "{2}[c-fC-F][dD]u\\\\"
_LONE_SURROGATE_REVERSED = (
    f"{_LOW_REVERSED}{_REAL_ESCAPE_END}(?!{_HIGH_REVERSED}{_REAL_ESCAPE_END})"  # a low half after no high half
    f"|(?<!{_LOW_REVERSED}){_HIGH_REVERSED}{_REAL_ESCAPE_END}"  # a high half before no low half
)
"""A lone surrogate escape in the reversed text (there, what follows an escape in the text precedes it, so both
halves are found by bounded look-arounds and the escape's own backslash by an unbounded look-ahead)."""
_REPLACEMENT_REVERSED = "dfffu\\\\"
"""`\\ufffd` reversed, as a replacement string (its backslash escaped)."""


def repaired_text(text: Column, valid: Column | None = None) -> Column:
    """`text` (a line as read, its bytes unchecked) as valid UTF-8: each sequence that is not UTF-8 -> U+FFFD.
    `valid`: `is_valid_utf8(text)`, where it is computed already."""
    return F.when(F.is_valid_utf8(text) if valid is None else valid, text).otherwise(F.make_valid_utf8(text))


def invalid_bytes(text: Column, valid: Column | None = None) -> Column:
    """The line's bytes where they are not UTF-8, else NULL (`valid`: as for `repaired_text`)."""
    return F.when(~(F.is_valid_utf8(text) if valid is None else valid), text.cast("binary"))


def first_invalid_offset(line_bytes: Column) -> Column:
    """The 0-based offset of the first byte that starts no well-formed UTF-8 sequence; NULL for NULL bytes."""
    one_char_per_byte = F.decode(line_bytes, "ISO-8859-1")
    return F.length(F.regexp_extract(one_char_per_byte, _VALID_UTF8_PREFIX, 0))


def may_hold_surrogate_escape(text: Column) -> Column:
    """A cheap test that passes every text holding a surrogate escape (`\\ud800`-`\\udfff`, pairs included)."""
    return text.contains("\\ud") | text.contains("\\uD")


def holds_lone_surrogate(text: Column) -> Column:
    """The JSON text holds a lone surrogate escape (not an escaped backslash followed by `ud800`)."""
    return may_hold_surrogate_escape(text) & F.reverse(text).rlike(_LONE_SURROGATE_REVERSED)


def without_lone_surrogates(text: Column) -> Column:
    """JSON text with each lone surrogate escape replaced by `\\ufffd` (valid pairs and other escapes kept): the
    text a record is parsed from, so that one such string costs that string's character, not the record."""
    replaced = F.reverse(F.regexp_replace(F.reverse(text), _LONE_SURROGATE_REVERSED, _REPLACEMENT_REVERSED))
    return F.when(may_hold_surrogate_escape(text), replaced).otherwise(text)
