"""What `lakenorm normalize` says: the same lines as always when stdout is not a terminal, progress and
a summary table on a terminal, one JSON document with `--json`."""
from __future__ import annotations

import io
import json
from datetime import datetime, timezone

from lakenorm_app.progress import Report
from normalization_core.api import LoadResult, Settling, StreamResult
from normalization_core.transform.counts import NulledCounts

ORDERS = StreamResult(stream="orders", raw_table="_norm_raw_orders", raw_lines=4, rejected_lines=1,
                      typed_rows={"orders": 3, "orders__line_items": 7},
                      nulled={"orders": NulledCounts(values=2, rows=1)})
LOADS = [LoadResult("shop", "1717200000.000000", {"orders": ORDERS}),
         LoadResult("shop", "1717203600.000000", {"orders": ORDERS}, quarantined_lines=2)]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def said(report: Report) -> str:
    report.starting("shop", [r.load_id for r in LOADS])
    for result in LOADS:
        report.loaded(result)
    report.finished("shop")
    report.note("web", "nothing to normalize")
    report.finish()
    return report.out.getvalue()


def test_not_a_terminal_prints_one_line_per_table_as_before():
    out = said(Report.choose(False, io.StringIO()))
    lines = out.splitlines()
    assert lines[0].split() == ["shop", "1717200000.000000", "_norm_raw_orders", "4", "rows", "1", "rejected"]
    assert lines[1].split() == ["shop", "1717200000.000000", "orders", "3", "rows", "2", "nulled"]
    assert lines[2].split() == ["shop", "1717200000.000000", "orders__line_items", "7", "rows"]
    assert "shop  1717203600.000000  quarantined lines: 2" in lines and lines[-1] == "web: nothing to normalize"
    assert "normalizing" not in out and "time" not in out  # no progress, no summary table


def test_a_terminal_shows_progress_and_a_summary_table():
    out = said(Report.choose(False, Terminal()))
    lines = out.splitlines()
    assert lines[0] == "shop: normalizing 1717200000.000000, 1717203600.000000"
    assert lines[1] == ("shop  1717200000.000000  orders: 3 tables, 4 lines, 10 typed rows, 2 nulled, 1 rejected")
    assert "web: nothing to normalize" in lines
    header = next(line for line in lines if line.startswith("table"))
    assert header.split() == ["table", "loads", "rows", "nulled", "rejected", "time"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[lines.index(header) + 1:]}
    assert rows["shop._norm_raw_orders"] == ["2", "8", "0", "2"]
    assert rows["shop.orders"] == ["2", "6", "4", "0"] and rows["shop.orders__line_items"] == ["2", "14", "0", "0"]
    assert lines[-1].startswith("shop (all tables)") and lines[-1].endswith("s")


def test_json_prints_one_document_and_nothing_else():
    report = Report.choose(True, Terminal())  # --json wins over the terminal
    report.failed("shop", "1717207200.000000", "load package '1717207200.000000': truncated gzip")
    readable = datetime(2026, 11, 27, 6, 41, 12, tzinfo=timezone.utc)
    report.settling("shop", "", Settling(files=3, units=1, readable_at=readable))
    document = json.loads(said(report))
    assert [load["load_id"] for load in document["loads"]] == ["1717200000.000000", "1717203600.000000"]
    stream = document["loads"][0]["streams"]["orders"]
    assert stream["raw_lines"] == 4 and stream["typed_rows"] == {"orders": 3, "orders__line_items": 7}
    assert stream["nulled"] == {"orders": {"values": 2, "rows": 1}}
    assert document["loads"][1]["quarantined_lines"] == 2
    assert document["errors"] == [{"source": "shop", "load_id": "1717207200.000000",
                                   "error": "load package '1717207200.000000': truncated gzip"}]
    assert document["notes"][0]["settling"] == {"files": 3, "units": 1, "readable_at": "2026-11-27T06:41:12+00:00"}
    assert document["notes"][1] == {"source": "web", "message": "nothing to normalize", "settling": None}
    assert set(document["seconds"]) == {"shop"}
