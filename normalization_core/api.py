"""lakenorm's public face: what the command line, the Dagster code location and notebooks use.

Everything outside the library imports from here; the modules behind it may change shape.
"""
from __future__ import annotations

from normalization_core.stream_settings import resolve_primary_key
from normalization_core.columns import SystemNames
from normalization_core.conventions import system_names
from normalization_core.config import CONFIG_ENV, DEFAULT_CONFIG_FILE, LakenormConfig, SourceConfig, load_config
from normalization_core.data_checks import (
    CheckOutcome,
    non_overlapping_validity,
    one_current_version,
    orphan_child_rows,
    rows_typed_per_load,
    unique_primary_key,
)
from normalization_core.errors import ConfigError, LakenormError
from normalization_core.io.delta import is_delta_table, read_table
from normalization_core.io.maintenance import maintain_tables, table_row_count, table_schema
from normalization_core.io.spark import build_spark_session, spark_session
from normalization_core.io.versions import latest_versions
from normalization_core.landing import known_streams, landed_packages
from normalization_core.pipeline import normalize_load, normalize_loads, pending_packages
from normalization_core.plan import StreamPlan, asset_stream_plans, history_table, output_tables, stream_plans
from normalization_core.rebuild import rebuild_stream
from normalization_core.registered import registered_load_ids, registered_results
from normalization_core.results import LoadResult, StreamResult
from normalization_core.samples import SampleSpec, write_catalog, write_sample_packages
from normalization_core.schema import schema_document
from normalization_core.schema.model import StreamSchema, TableSchema, find_table, lineage, root_table
from normalization_core.source_tables import SourceTables, raw_table_name
from normalization_core.transform.raw import raw_schema

__all__ = [
    "CONFIG_ENV", "DEFAULT_CONFIG_FILE", "CheckOutcome", "ConfigError", "LakenormConfig", "LakenormError", "LoadResult",
    "SampleSpec", "SourceConfig", "SourceTables", "StreamPlan", "StreamResult", "StreamSchema", "SystemNames",
    "TableSchema", "asset_stream_plans", "build_spark_session", "find_table", "history_table", "is_delta_table",
    "known_streams", "landed_packages", "latest_versions", "lineage", "load_config", "maintain_tables",
    "non_overlapping_validity", "normalize_load", "normalize_loads", "one_current_version", "orphan_child_rows",
    "output_tables", "pending_packages", "raw_schema", "raw_table_name", "read_table", "rebuild_stream",
    "registered_load_ids", "registered_results", "resolve_primary_key", "root_table", "rows_typed_per_load", "schema_document",
    "spark_session", "stream_plans", "system_names", "table_row_count", "table_schema", "unique_primary_key",
    "write_catalog", "write_sample_packages",
]
