"""System column and table names, one set per convention (SPEC §3).

Every other module asks this one for a system name; no `_norm_*` literal lives elsewhere. Which set a
convention uses: `conventions.system_names`.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SystemNames:
    """The system tables and columns of one convention."""

    prefix: str
    """Prefix of every system name (`_norm`, `_dlt`, `_airbyte`)."""
    raw_id: str
    """Raw record id, deterministic from load ID, file and line."""
    extracted_at: str
    """Airbyte `emitted_at`, else the manifest's `created_at`."""
    load_id: str
    """Load ID of the package the record came from."""
    data: str
    """The record's JSON text, untouched (but bytes that are not UTF-8: U+FFFD here, kept in `data_bytes`)."""
    meta: str
    """Changes made while typing (`struct<changes: array<struct<field, change, reason>>>`)."""
    normalized_at: str
    """When the row was written by lakenorm."""
    parent_id_template: str
    """Row key of the parent row in child tables; `{parent}` is the parent table's name."""
    list_idx: str
    """Position in the parent array (child tables)."""
    root_id: str
    """Row key of the root row (all descendants)."""
    valid_from: str
    """SCD: first instant a version is valid."""
    valid_to: str
    """SCD: instant the next newer version became valid (NULL for the newest)."""
    is_current: str
    """SCD: the newest not-deleted version of its key."""
    unique_key: str
    """SCD: hash of the primary key."""
    unique_key_scd: str
    """SCD: hash of primary key and version."""
    loads_table: str
    """Load registry table."""
    versions_table: str
    """Schema versions table."""
    raw_table_prefix: str
    """Raw table name = prefix + stream."""
    child_record_columns: bool = False
    """Child tables also carry the record's raw id, extracted at and normalized at (Airbyte's do)."""
    stream_loads_table: str = ""
    """Where the per-(load, stream) registry lives when `loads_table` has dlt's shape (one row per load)."""
    record_row_key: bool = False
    """A record's own key named as the root table's row key column (`_dlt_id`) sets its row's key, as dlt's
    normalizer does, instead of being renamed like other keys named as system columns."""
    foreign_names: tuple[str, ...] = ()
    """Names the producer's own tables use for their system columns (Airbyte's Destinations V2): never given
    to data, so that a reader expecting them finds none holding a record's value."""

    @property
    def registry_table(self) -> str:
        """The table of one row per (load ID, stream) that lakenorm reads to know what is normalized."""
        return self.stream_loads_table or self.loads_table

    @property
    def dlt_system_tables(self) -> bool:
        """`loads_table` and `versions_table` carry dlt's columns and values (SPEC §3, dlt convention)."""
        return bool(self.stream_loads_table)

    @property
    def state_folder(self) -> str:
        """Folder beside a source's tables (`<warehouse>/<source>/_norm_state/`) holding lakenorm's own state files,
        so that every other entry there is a table."""
        return f"{self.prefix}_state"

    @property
    def earlier_listing_file(self) -> str:
        """Where earlier versions kept a source's listing cursor, among its tables (`_norm_listing.json`)."""
        return f"{self.prefix}_listing.json"

    @property
    def upstream_changes(self) -> str:
        """Raw column: changes the producer already made to the record (Airbyte's `_airbyte_meta.changes`)."""
        return f"{self.prefix}_upstream_changes"

    @property
    def data_bytes(self) -> str:
        """Raw column: the line's exact bytes where they are not UTF-8 (`data` holds U+FFFD for them), else NULL."""
        return f"{self.prefix}_data_bytes"

    @property
    def file(self) -> str:
        """Path of the file inside its package that held the line."""
        return f"{self.prefix}_file"

    @property
    def line(self) -> str:
        """1-based line number inside that file."""
        return f"{self.prefix}_line"

    @property
    def error(self) -> str:
        """NULL, or why the line could not be typed (not JSON, not an object), or where its bytes are not UTF-8."""
        return f"{self.prefix}_error"

    @property
    def quarantine_table(self) -> str:
        """Source-level table for lines that belong to no stream (unparseable Airbyte messages)."""
        return f"{self.prefix}_quarantine"

    def raw_table(self, stream: str) -> str:
        return f"{self.raw_table_prefix}{stream}"

    def row_id(self, table: str | Mapping[str, Any]) -> str:
        """Row key column of a typed table (a table document, or its name).

        Airbyte names it after the stream or nested field: the layout stores that name in the table's
        `row_key`; a table without one (an older schema, or a bare name) is keyed after its own name.
        """
        if isinstance(table, Mapping):
            if table.get("row_key"):
                return str(table["row_key"])
            table = str(table["name"])
        return f"_airbyte_{table}_hashid" if self.prefix == "_airbyte" else f"{self.prefix}_id"

    def parent_key(self, table: Mapping[str, Any]) -> str:
        """Parent row key column of the child table `table` (its stored `parent_key`, else by its parent's name)."""
        return str(table.get("parent_key") or self.parent_id(str(table["parent"])))

    def history_table(self, table: str) -> str:
        """SCD history table of an `append_dedup` stream's root table (the suffix is never shortened)."""
        return f"{table}_scd"

    def parent_id(self, parent_table: str) -> str:
        """Parent row key column of a child table."""
        return self.parent_id_template.format(parent=parent_table)


NATIVE = SystemNames(
    prefix="_norm", raw_id="_norm_raw_id", extracted_at="_norm_extracted_at", load_id="_norm_load_id",
    data="_norm_data", meta="_norm_meta", normalized_at="_norm_normalized_at",
    parent_id_template="_norm_parent_id", list_idx="_norm_list_idx", root_id="_norm_root_id",
    valid_from="_norm_valid_from", valid_to="_norm_valid_to", is_current="_norm_is_current",
    unique_key="_norm_unique_key", unique_key_scd="_norm_unique_key_scd",
    loads_table="_norm_loads", versions_table="_norm_versions", raw_table_prefix="_norm_raw_",
)

DLT = SystemNames(
    prefix="_dlt", raw_id="_dlt_raw_id", extracted_at="_dlt_extracted_at", load_id="_dlt_load_id",
    data="_dlt_data", meta="_dlt_meta", normalized_at="_dlt_normalized_at",
    parent_id_template="_dlt_parent_id", list_idx="_dlt_list_idx", root_id="_dlt_root_id",
    valid_from="_dlt_valid_from", valid_to="_dlt_valid_to", is_current="_dlt_is_current",
    unique_key="_dlt_unique_key", unique_key_scd="_dlt_unique_key_scd",
    loads_table="_dlt_loads", versions_table="_dlt_version", raw_table_prefix="_dlt_raw_",
    stream_loads_table="_dlt_stream_loads", record_row_key=True,
)

AIRBYTE = SystemNames(
    prefix="_airbyte", raw_id="_airbyte_ab_id", extracted_at="_airbyte_emitted_at",
    load_id="_airbyte_load_id", data="_airbyte_data", meta="_airbyte_meta",
    normalized_at="_airbyte_normalized_at", parent_id_template="_airbyte_{parent}_foreign_hashid",
    list_idx="_airbyte_list_idx", root_id="_airbyte_root_hashid",
    valid_from="_airbyte_start_at", valid_to="_airbyte_end_at", is_current="_airbyte_active_row",
    unique_key="_airbyte_unique_key", unique_key_scd="_airbyte_unique_key_scd",
    loads_table="_airbyte_loads", versions_table="_airbyte_versions",
    raw_table_prefix="_airbyte_raw_", child_record_columns=True,
    foreign_names=("_airbyte_raw_id", "_airbyte_extracted_at", "_airbyte_loaded_at", "_airbyte_generation_id"),
)

# Columns of the load registry (`_norm_loads`), the same under every convention.
LOADS_SOURCE = "source"
LOADS_STREAM = "stream"
LOADS_LOAD_ID = "load_id"
LOADS_CREATED_AT = "created_at"
LOADS_NORMALIZED_AT = "normalized_at"
LOADS_STATUS = "status"
LOADS_ROWS = "rows"
LOADS_RAW_LINES = "raw_lines"
LOADS_REJECTED = "rejected_lines"
LOADS_DISCARDED_ROWS = "discarded_rows"
LOADS_DISCARDED_VALUES = "discarded_values"
LOADS_SCHEMA_HASH = "schema_version_hash"
LOADS_STATE = "state"
LOADS_TABLE_VERSIONS = "table_versions"
"""Per table the load committed, the Delta version of its commit (the versions a snapshot reads, SPEC §11)."""
STATUS_NORMALIZED = "normalized"
"""Registry status of a load whose tables are all committed."""

# dlt's `_dlt_loads` (one row per load) and the extra columns of `_dlt_version` (dlt convention).
DLT_LOADS_SCHEMA_NAME = "schema_name"
DLT_LOADS_INSERTED_AT = "inserted_at"
DLT_STATUS_LOADED = 0
"""dlt's status of a completed load package."""
DLT_ENGINE_VERSION = 11
"""dlt's schema engine version (dlt 1.x), written as `_dlt_version.engine_version`."""
VERSIONS_ENGINE_VERSION = "engine_version"
VERSIONS_SCHEMA_NAME = "schema_name"

# Columns of the schema versions table (`_norm_versions`, SPEC §3), the same under every convention.
VERSIONS_STREAM = "stream"
VERSIONS_VERSION = "version"
VERSIONS_HASH = "version_hash"
VERSIONS_SCHEMA = "schema"
"""The stream's schema document as YAML."""
VERSIONS_INSERTED_AT = "inserted_at"

# Airbyte CDC columns of a record (source columns, the same under every convention; SPEC §6).
CDC_UPDATED_AT = "_ab_cdc_updated_at"
CDC_LOG_POS = "_ab_cdc_log_pos"
CDC_DELETED_AT = "_ab_cdc_deleted_at"
