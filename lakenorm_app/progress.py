"""What `lakenorm normalize` says while it works: one of three reports.

- `plain` (stdout is not a terminal: a pipe, a log, a cron job): the lines it has always printed, one per table a
  load wrote, and a line per source with nothing to do or files still settling; nothing else changes;
- `terminal`: a progress line per source (which loads it normalizes) and per load and stream once written, then a
  summary table (tables, rows, nulled values, rejected lines, time per source);
- `json` (`--json`, for scripts): nothing while it works, then one JSON document on stdout with every load's
  results, the errors and what still settles.

Errors and warnings go to stderr as one line each, whatever the report (SPEC §9).
"""
from __future__ import annotations

import dataclasses
import json
import sys
import time
from collections import defaultdict
from typing import Any, TextIO

from normalization_core.api import LoadResult, Settling, settling_text


class Report:
    def __init__(self, mode: str, out: TextIO | None = None) -> None:
        self.mode = mode
        self.out = out or sys.stdout
        self.loads: list[LoadResult] = []
        self.errors: list[dict[str, str | None]] = []
        self.warnings: list[dict[str, str]] = []
        self.notes: list[dict[str, Any]] = []
        self.seconds: dict[str, float] = defaultdict(float)
        self._started: dict[str, float] = {}

    @classmethod
    def choose(cls, as_json: bool, out: TextIO | None = None) -> Report:
        out = out or sys.stdout
        return cls("json" if as_json else "terminal" if out.isatty() else "plain", out)

    def _say(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def starting(self, source: str, load_ids: list[str]) -> None:
        """A source's loads are about to be normalized."""
        self._started[source] = time.monotonic()
        if self.mode == "terminal" and load_ids:
            shown = ", ".join(load_ids[:3]) + (f", ... ({len(load_ids)} loads)" if len(load_ids) > 3 else "")
            self._say(f"{source}: normalizing {shown}")

    def loaded(self, result: LoadResult) -> None:
        """A load's tables are written."""
        self.loads.append(result)
        if self.mode == "plain":
            print_summary(result, self.out)
        elif self.mode == "terminal":
            for stream in result.streams.values():
                rows = sum(stream.typed_rows.values())
                nulled = sum(n.values for n in stream.nulled.values())
                self._say(f"{result.source}  {result.load_id}  {stream.stream}: {len(stream.typed_rows) + 1} tables, "
                          f"{stream.raw_lines:,} lines, {rows:,} typed rows, {nulled:,} nulled, "
                          f"{stream.rejected_lines:,} rejected")

    def finished(self, source: str) -> None:
        """A source's loads are done (written or failed)."""
        if source in self._started:
            self.seconds[source] += time.monotonic() - self._started.pop(source)

    def failed(self, source: str, load_id: str | None, message: str) -> None:
        """A load (or a package that is no load: `load_id` None) failed: one line on stderr."""
        print(f"lakenorm: {message}", file=sys.stderr, flush=True)
        self.errors.append({"source": source, "load_id": load_id, "error": message})

    def warned(self, source: str, message: str) -> None:
        """Something to know that fails nothing (a producer file replaced after it was normalized): one line on
        stderr."""
        print(f"lakenorm: warning: {source}: {message}", file=sys.stderr, flush=True)
        self.warnings.append({"source": source, "warning": message})

    def note(self, source: str, text: str, settling: Settling | None = None) -> None:
        """Nothing to normalize, or files still settling."""
        if self.mode == "json":
            self.notes.append({"source": source, "message": text, "settling": None if settling is None else {
                "files": settling.files, "units": settling.units, "readable_at": settling.readable_at.isoformat()}})
        else:
            self._say(f"{source}: {text}")

    def settling(self, source: str, lead: str, settling: Settling) -> None:
        self.note(source, f"{lead}{settling_text(settling)}", settling)

    def finish(self) -> None:
        if self.mode == "json":
            json.dump({"loads": [load_document(r) for r in self.loads], "errors": self.errors,
                       "warnings": self.warnings, "notes": self.notes,
                       "seconds": {s: round(t, 3) for s, t in self.seconds.items()}}, self.out, indent=2)
            self.out.write("\n")
        elif self.mode == "terminal" and self.loads:
            self._say(summary_table(self.loads, self.seconds))


def load_document(result: LoadResult) -> dict[str, Any]:
    """A load's results as JSON: its streams with their raw lines, typed rows, nulled and discarded counts."""
    return dataclasses.asdict(result)


def print_summary(result: LoadResult, out: TextIO | None = None) -> None:
    """One line per table the load wrote: each stream's raw table, then its typed and child tables."""
    out = out or sys.stdout
    for stream in result.streams.values():
        print(f"{result.source}  {result.load_id}  {stream.raw_table:<40} {stream.raw_lines:>10} rows"
              f"  {stream.rejected_lines} rejected", file=out)
        for table, rows in stream.typed_rows.items():
            nulled = stream.nulled.get(table)
            extra = f"  {nulled.values} nulled" if nulled is not None and nulled.values else ""
            print(f"{result.source}  {result.load_id}  {table:<40} {rows:>10} rows{extra}", file=out)
    if result.quarantined_lines:
        print(f"{result.source}  {result.load_id}  quarantined lines: {result.quarantined_lines}", file=out)


def summary_table(loads: list[LoadResult], seconds: dict[str, float]) -> str:
    """Per source and table: loads, rows, nulled values, rejected lines; per source its time."""
    totals: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for result in loads:
        for stream in result.streams.values():
            raw = totals[(result.source, stream.raw_table)]
            raw[0], raw[1], raw[3] = raw[0] + 1, raw[1] + stream.raw_lines, raw[3] + stream.rejected_lines
            for table, rows in stream.typed_rows.items():
                typed = totals[(result.source, table)]
                nulled = stream.nulled.get(table)
                typed[0], typed[1] = typed[0] + 1, typed[1] + rows
                typed[2] += nulled.values if nulled is not None else 0
    width = max(len("table"), *(len(f"{s}.{t}") for s, t in totals))
    lines = [f"{'table':<{width}} {'loads':>6} {'rows':>12} {'nulled':>8} {'rejected':>9} {'time':>8}"]
    for source in dict.fromkeys(s for s, _ in totals):
        for (owner, table), (count, rows, nulled, rejected) in totals.items():
            if owner == source:
                lines.append(f"{f'{source}.{table}':<{width}} {count:>6} {rows:>12,} {nulled:>8,} {rejected:>9,} {'':>8}")
        lines.append(f"{f'{source} (all tables)':<{width}} {'':>6} {'':>12} {'':>8} {'':>9} "
                     f"{seconds.get(source, 0.0):>7.1f}s")
    return "\n".join(lines)
