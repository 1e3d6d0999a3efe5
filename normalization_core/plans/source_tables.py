"""Where one source's tables live and what they are called (SPEC §3, §4): the context its writers share.

`SourceTables` is to a source what dlt's `ItemsNormalizer` storages are to a load: built once from the
configuration and the source, then asked for every table path, raw table name and system table.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from normalization_core.columns import SystemNames
from normalization_core.configuration.config import LakenormConfig, SourceConfig
from normalization_core.io.storage import StorePath, is_s3
from normalization_core.plans.table_names import raw_tables


def raw_table_name(source: SourceConfig, stream: str) -> str:
    """The raw table of a stream under the source's convention (`_norm_raw_<stream>`, `_airbyte_raw_<stream>`)."""
    return raw_tables(source, [stream])[stream]


@dataclass(frozen=True)
class SourceTables:
    """One source's tables in the warehouse: `<warehouse>/<source>/<table>`."""

    config: LakenormConfig
    source: SourceConfig

    @classmethod
    def of(cls, config: LakenormConfig, source_name: str) -> SourceTables:
        return cls(config, config.source(source_name))

    @property
    def names(self) -> SystemNames:
        """The system tables and columns of the source's convention."""
        return self.source.naming.names

    def path(self, table: str) -> str:
        return self.config.table_path(self.source.name, table)

    def raw_table(self, stream: str) -> str:
        return raw_table_name(self.source, stream)

    def raw_path(self, stream: str) -> str:
        return self.path(self.raw_table(stream))

    @property
    def registry_path(self) -> str:
        """The load registry: one row per (load ID, stream) normalized."""
        return self.path(self.names.registry_table)

    @property
    def versions_path(self) -> str:
        """The schema versions table."""
        return self.path(self.names.versions_table)

    @property
    def quarantine_path(self) -> str:
        return self.path(self.names.quarantine_table)

    @property
    def loads_path(self) -> str:
        """The loads table (under `dlt`, dlt's `_dlt_loads`: one row per complete load)."""
        return self.path(self.names.loads_table)

    def storage_options(self, path: str) -> dict[str, str] | None:
        """delta-rs options to read `path` (None for a local path)."""
        return self.config.storage_options(path)

    def stored_tables(self) -> list[str]:
        """Table folders of a local or `s3a://` warehouse (other object stores: use your catalog or `DESCRIBE`)."""
        location = self.path("").rstrip("/")
        if self.config.object_store is not None and is_s3(location):
            root: Path | StorePath = StorePath(location, self.config.object_store)
        elif "://" in location:
            return []
        else:
            root = Path(location)
        if not root.is_dir():
            return []
        return sorted(p.name for p in root.iterdir() if (p / "_delta_log").is_dir())
