"""Every input kind reads a line whose bytes are not UTF-8 the same way (SPEC §10): its record's text with U+FFFD
in their place, the line's exact bytes in `<prefix>_data_bytes`, and `<prefix>_error` naming the first bad
byte's offset; the record is still typed. One Spark job per kind: its lines classified into raw rows."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from normalization_core.configuration.config import parse_config
from normalization_core.inputs import source_input
from normalization_core.naming.conventions import system_names
from normalization_core.passes.pending import pending_packages
from normalization_core.transform import raw as R
from tests.normalization_core.inputs.test_exact_raw import KINDS, _write

TEXTS = ['{"id":1,"name":"ok"}', '{"id":2,"name":"x\udcffy","n\udcfe":1}', '{"id":3,"name":"x\\ud800y"}']
"""A valid record, one whose bytes are not UTF-8 (U+DC80..U+DCFF: those bytes), one with a lone surrogate escape
(UTF-8 text: nothing to repair while the line is read). Compact: a flattened Airbyte V2 record is re-joined so."""


def _dlt_extract(landing: Path, texts: list[str]) -> None:
    """A package as dlt's `extract()` leaves it, its job file written here (dlt writes UTF-8 only): one line of
    two items, then one of one."""
    folder = landing / "1717200000.1"
    _write(folder / "new_jobs" / "events.a1b2c3.0.typed-jsonl", [f"[{texts[0]},{texts[1]}]", f"[{texts[2]}]"])
    (folder / "schema.json").write_text(json.dumps({"tables": {"events": {"columns": {}}}}))


INPUTS = {**{kind: (input_kind, write) for kind, (input_kind, write, _) in KINDS.items()},
          "dlt_extract": ("dlt_extract", _dlt_extract)}


def _not_utf8(landing: Path) -> list[bytes]:
    """The landed lines that are not UTF-8, as bytes (the test's own oracle)."""
    lines = [line for path in sorted(landing.rglob("*")) if path.is_file() for line in path.read_bytes().split(b"\n")]
    return [line for line in lines if line != line.decode("utf-8", "replace").encode("utf-8")]


def _first_bad_byte(line: bytes) -> int:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as err:
        return err.start
    raise AssertionError(line)


@pytest.mark.parametrize("kind", sorted(INPUTS))
def test_a_line_that_is_not_utf8_is_repaired_and_kept_byte_for_byte(spark, tmp_path, kind):
    input_kind, write = INPUTS[kind]
    write(tmp_path / "landing", TEXTS)
    config = parse_config({"warehouse": "wh", "sources": [{"name": "shop", "landing": "landing", "input": input_kind,
                                                           "settle_seconds": 0}]}, base_dir=tmp_path)
    source, names = config.source("shop"), system_names("native")
    [package] = pending_packages(spark, config, source).packages
    lines = source_input(source).classify(spark, package).where(F.col(R.KIND) == "record")
    rows = R.raw_rows(lines.withColumn(R.LOAD_ID, F.lit(package.load_id)), names).collect()
    [bad_line] = _not_utf8(tmp_path / "landing")

    by_id = {json.loads(r[names.data])["id"]: r for r in rows}
    assert sorted(by_id) == [1, 2, 3]
    bad = by_id[2]
    assert bad[names.data] == '{"id":2,"name":"x\ufffdy","n\ufffd":1}'
    assert bytes(bad[names.data_bytes]) == bad_line
    error = f"{R.NOT_UTF8}{_first_bad_byte(bad_line)} (replaced by U+FFFD; the exact bytes are in {names.data_bytes})"
    assert bad[names.error] == error
    # dlt's line holds the valid record too: each item of a line carries that line's bytes
    shares_the_line = kind == "dlt_extract"
    assert by_id[1][names.data_bytes] == (bytearray(bad_line) if shares_the_line else None)
    assert by_id[1][names.error] == (error if shares_the_line else None)
    assert (by_id[3][names.data_bytes], by_id[3][names.error]) == (None, None)
    assert by_id[3][names.data] == TEXTS[2]  # raw keeps the escape as written: it is valid JSON text
