"""What normalizing a load produced, per stream: the counts the CLI prints and Dagster records (SPEC §8)."""
from __future__ import annotations

from dataclasses import dataclass, field

from normalization_core.transform.counts import NulledCounts
from normalization_core.transform.discard import DiscardedCounts


@dataclass(frozen=True)
class StreamResult:
    stream: str
    raw_table: str
    raw_lines: int
    rejected_lines: int
    expected_records: int | None = None
    typed_rows: dict[str, int] = field(default_factory=dict)
    """Rows written per typed table (root and children) of this load."""
    schema_version_hash: str | None = None
    nulled: dict[str, NulledCounts] = field(default_factory=dict)
    """NULLED values and rows per typed table written from this load."""
    discarded: dict[str, DiscardedCounts] = field(default_factory=dict)
    """Rows and values per typed table the stream's schema contract left out of this load (raw keeps them)."""


@dataclass(frozen=True)
class LoadResult:
    source: str
    load_id: str
    streams: dict[str, StreamResult] = field(default_factory=dict)
    quarantined_lines: int = 0
