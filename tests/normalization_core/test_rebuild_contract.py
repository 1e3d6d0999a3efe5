"""A rebuild is the load path over all of raw: what a stream's schema contract discarded when its loads
were normalized (`discard_row`, `discard_value`) is discarded again, so a rebuild gives the tables the loads gave;
on `append` and on `append_dedup` streams. Cases: tests/cases/dlt_schema/discards.json and dedup_discards.json."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from normalization_core.passes.rebuild import rebuild_stream

from tests.normalization_core.test_dlt_schema_settings import lakenorm_stream_settings
from tests.normalization_core.test_schema_contract_discards import normalize_both_loads

CASES = Path(__file__).parents[1] / "cases/dlt_schema"


def table_rows(ours, table: str) -> list[str]:
    """The table's rows without the time they were normalized at (a rebuild's is its own)."""
    df = ours(table)
    return sorted(json.dumps(r.asDict(recursive=True), sort_keys=True, default=str)
                  for r in df.drop(*[c for c in df.columns if c.endswith("_normalized_at")]).collect())  # test rows


@pytest.mark.parametrize("case_file", ["discards.json", "dedup_discards.json"])
def test_a_rebuild_discards_what_the_loads_discarded(spark, tmp_path, case_file):
    data = json.loads((CASES / case_file).read_text())
    settings = lakenorm_stream_settings(data["dlt"]) if "dlt" in data else None
    ours, _, config = normalize_both_loads(spark, tmp_path, data, settings)
    streams = [c["stream"] for c in data["cases"]]
    written = {s: sorted(p.name for p in (tmp_path / "wh/chain").iterdir()
                         if p.name == s or p.name.startswith((f"{s}__", f"{s}_scd"))) for s in streams}
    before = {t: table_rows(ours, t) for s in streams for t in written[s]}

    rebuilt = {s: rebuild_stream(spark, config, "chain", s) for s in streams}

    assert {t: table_rows(ours, t) for s in streams for t in written[s]} == before
    assert {t: n for s in streams for t, n in rebuilt[s].items()} == {t: len(rows) for t, rows in before.items()}
