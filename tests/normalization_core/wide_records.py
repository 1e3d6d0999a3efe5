"""Wide records: a generated stream of many columns nested deep, and real GitHub events. Used by the
wide tests and `bench/bench_wide.py`."""
from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

GITHUB_EVENTS = Path(__file__).parents[1] / "cases" / "wide" / "github_events.json.gz"


def deep_record(i: int, columns: int = 1000, depth: int = 8) -> dict[str, Any]:
    """`columns` scalar keys spread evenly over `depth` levels of nested objects (`n0.n1...`), by kind
    bigint / text / bool in turn."""
    record: dict[str, Any] = {"id": i}
    node = record
    for level in range(depth):
        for c in range(columns // depth + (1 if level < columns % depth else 0)):
            node[f"k{level}_{c}"] = (i * 7 + c, f"s{i}_{c}", (i + c) % 2 == 0)[c % 3]
        if level < depth - 1:
            node[f"n{level}"] = node = {}
    return record


def deep_paths(columns: int = 1000, depth: int = 8) -> list[str]:
    """The data columns `deep_record` gives under the `dlt` (and `native`) naming: `n0__k1_0`, ..."""
    names = ["id"]
    for level in range(depth):
        prefix = "".join(f"n{d}__" for d in range(level))
        names += [f"{prefix}k{level}_{c}" for c in range(columns // depth + (1 if level < columns % depth else 0))]
    return names


def github_events() -> list[dict[str, Any]]:
    """100 real events of GitHub's public events API, the page dlt's own normalizer tests use (see
    `tests/cases/wide/README.md`): hundreds of keys, objects nested 4-5 deep, arrays of objects."""
    with gzip.open(GITHUB_EVENTS, "rt", encoding="utf-8") as file:
        return json.load(file)
