"""The write-disposition plug-in interface (SPEC §6, §7): how a stream's typed tables are written, rebuilt,
hung into the asset graph and checked.

A disposition is named by a stream's `destination_sync_mode`; the name is parsed into its plug-in once, when
the stream's plan is made (`dispositions.disposition`), and every layer after asks the plug-in, never the name.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Protocol

from pyspark.sql import DataFrame, SparkSession

from normalization_core.checks.data_checks import NO_ORPHANS
from normalization_core.columns import SystemNames
from normalization_core.configuration.config import SourceConfig
from normalization_core.io.load_packages import LoadPackage
from normalization_core.schema import StreamSchema
from normalization_core.schema.contract import Discards
from normalization_core.schema.stream_settings import StreamSettings
from normalization_core.transform.counts import NulledCounts
from normalization_core.transform.discard import DiscardedCounts, flag_discards, without_discarded
from normalization_core.transform.parse import RawRecords


class PlannedStream(Protocol):
    """What a disposition reads of a stream's plan (`plans.stream_plans.PlannedStream`). A plan carries its
    disposition, so the plans layer sits above this one: the plug-ins name what they need, not the plan's class."""

    @property
    def settings(self) -> StreamSettings: ...

    @property
    def schema(self) -> StreamSchema: ...

    @property
    def load_schema(self) -> StreamSchema | None: ...

    @property
    def discards(self) -> Discards: ...

    @property
    def tables(self) -> list[str]: ...

    @property
    def parents(self) -> dict[str, str | None]: ...

    @property
    def disposition(self) -> Disposition: ...


class TablesOfSource(Protocol):
    """What a disposition reads of where a source's tables live (`plans.source_tables.TablesOfSource`)."""

    @property
    def source(self) -> SourceConfig: ...

    @property
    def names(self) -> SystemNames: ...

    @property
    def registry_path(self) -> str: ...

    def path(self, table: str) -> str: ...

    def storage_options(self, path: str) -> dict[str, str] | None: ...


@dataclass(frozen=True)
class TypedCounts:
    """What one load put in each typed table of its stream."""

    rows: dict[str, int]
    nulled: dict[str, NulledCounts]
    discarded: dict[str, DiscardedCounts] = field(default_factory=dict)
    """Rows and values the stream's schema contract left out, per table (SPEC §5.4)."""


@dataclass(frozen=True)
class TableCheck:
    """A data check (`data_checks`' check names) of one of a stream's tables."""

    name: str
    table: str
    against: str | None = None
    """The other table it reads: a child's parent rows (orphans), a history's current table."""
    per_load: bool = True
    """About the run's loads alone (else table-wide)."""


class Disposition(ABC):
    """How a stream's loads reach its typed tables."""

    name: ClassVar[str]
    """The `destination_sync_mode` that names it."""
    summary: ClassVar[str]
    """What it does to the tables, in a phrase (the asset catalog's descriptions)."""
    root_role: ClassVar[str] = "Root table of stream `{stream}`"
    """What the stream's root table is, in the asset catalog's words."""

    def history_table(self, plan: PlannedStream, names: SystemNames) -> str | None:
        """The stream's history table, if its disposition keeps one."""
        return None

    def output_tables(self, plan: PlannedStream, names: SystemNames) -> list[str]:
        """Every typed table the stream writes, in write order: parents before children."""
        history = self.history_table(plan, names)
        return plan.tables if history is None else [history, *plan.tables]

    def graph_parent(self, plan: PlannedStream, names: SystemNames, table: str) -> str | None:
        """The table `table` is built from, as the asset graph and lineage show it; None: the stream's raw table."""
        return plan.parents[table]

    def key_ordered_tables(self, plan: PlannedStream, names: SystemNames) -> dict[str, tuple[str, ...]]:
        """The stream's tables kept in key order, with their key columns (maintenance clusters them)."""
        return {}

    def loads_to_write(self, spark: SparkSession, tables: TablesOfSource, stream: str,
                       packages: Sequence[LoadPackage]) -> list[str]:
        """Which of a pass's loads (`packages`, all holding `stream`) the stream's typed tables take."""
        return [p.load_id for p in packages]

    def loads_to_rebuild(self, loads: DataFrame) -> DataFrame:
        """Which normalized loads (registry rows of the stream) a rebuild types."""
        return loads

    @abstractmethod
    def write(self, spark: SparkSession, tables: TablesOfSource, plan: PlannedStream, raw_rows: DataFrame | RawRecords,
              load_ids: Sequence[str]) -> dict[str, TypedCounts]:
        """Write the stream's typed tables for the loads of `raw_rows` (one commit per table); counts per load."""

    @abstractmethod
    def rebuild(self, spark: SparkSession, tables: TablesOfSource, plan: PlannedStream, raw_rows: DataFrame
                ) -> dict[str, int]:
        """Replace the stream's typed tables with what all of `raw_rows` (its rebuilt loads) give; rows per table."""

    def checks(self, plan: PlannedStream, names: SystemNames) -> list[TableCheck]:
        """The data checks of the stream's typed tables: the disposition's own, then each child's orphans (against
        its graph parent; table-wide when that parent holds every version, a history)."""
        history = self.history_table(plan, names)
        orphans = []
        for child in plan.tables[1:]:
            parent = self.graph_parent(plan, names, child)
            orphans.append(TableCheck(NO_ORPHANS, child, parent, per_load=parent != history))
        return [*self.own_checks(plan, names), *orphans]

    @abstractmethod
    def own_checks(self, plan: PlannedStream, names: SystemNames) -> list[TableCheck]:
        """The checks this disposition's tables need beyond orphans."""


def kept_rows(frames: dict[str, DataFrame], plan: PlannedStream, names: SystemNames) -> dict[str, DataFrame]:
    """The stream's typed frames (of `plan.load_schema`) without the rows and values its contract discards."""
    if not plan.discards:
        return frames
    flagged = flag_discards(frames, plan.load_schema or plan.schema, plan.discards, names)
    return {table: without_discarded(df, table, plan.discards) for table, df in flagged.frames.items()}
