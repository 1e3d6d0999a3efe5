"""lakenorm's public face: what the command line, the Dagster code location and notebooks use.

Everything outside the library imports from here; the modules behind it may change shape. One concept is
one name: the data checks are `data_checks.<check>`, a source's plans `stream_plans` (with `stored_in`: the
asset graph's, stored inferred streams included).
"""
from __future__ import annotations

from normalization_core.checks import data_checks
from normalization_core.columns import SystemNames
from normalization_core.configuration.config import (
    CONFIG_ENV,
    DEFAULT_CONFIG_FILE,
    LakenormConfig,
    SourceConfig,
    load_config,
    stream_upstream,
)
from normalization_core.configuration.validation import config_schema, config_yaml, schema_path
from normalization_core.dispositions import Disposition, TableCheck
from normalization_core.errors import ConfigError, LakenormError
from normalization_core.inputs.landing import (
    keeps_file_ledger,
    known_streams,
    landed_packages,
    landed_since,
    record_changed_files,
)
from normalization_core.inputs.settling import settling_text
from normalization_core.io.delta import is_delta_table, read_table
from normalization_core.io.load_packages import LoadPackage, Settling
from normalization_core.io.maintenance import (
    logged_row_count,
    logged_version_and_rows,
    maintain_tables,
    table_row_count,
    table_rows_and_schema,
    table_schema,
    table_size_bytes,
)
from normalization_core.io.storage import is_uri
from normalization_core.io.versions import latest_versions
from normalization_core.naming.conventions import system_names
from normalization_core.passes.catalog_tables import catalog_table_name, publish_tables
from normalization_core.passes.normalize import normalize_loads, normalize_source
from normalization_core.passes.pending import (
    loads_input_bytes,
    pending_input_bytes,
    pending_packages,
    source_input_bytes,
)
from normalization_core.passes.rebuild import rebuild_source_stream, rebuild_stream
from normalization_core.passes.registered import registered_load_ids, registered_results, registered_source_results
from normalization_core.passes.results import LoadResult, StreamResult
from normalization_core.passes.snapshots import (
    Snapshot,
    load_table_versions,
    read_snapshot,
    snapshot_versions,
    source_snapshot,
)
from normalization_core.plans.source_tables import SourceTables
from normalization_core.plans.stream_plans import (
    StreamPlan,
    history_table,
    key_ordered_tables,
    output_tables,
    stream_plans,
)
from normalization_core.runtime import engine
from normalization_core.runtime.engine import engine_session
from normalization_core.runtime.class_archive import ensure_class_archive
from normalization_core.runtime.engine_runs import lost_engine_errors, serving
from normalization_core.runtime.spark import build_spark_session, recording_session, small_input_conf, spark_session
from normalization_core.schema import schema_document
from normalization_core.schema.model import StreamSchema, TableSchema, find_table, lineage, root_table
from normalization_core.schema.stream_settings import resolve_primary_key
from normalization_core.transform.raw import raw_schema

__all__ = [
    # configuration and errors
    "CONFIG_ENV", "ConfigError", "DEFAULT_CONFIG_FILE", "LakenormConfig", "LakenormError", "SourceConfig",
    "config_schema", "config_yaml", "load_config", "schema_path", "stream_upstream",
    # Spark (`engine`: the local Spark Connect server)
    "build_spark_session", "engine", "engine_session", "ensure_class_archive", "lost_engine_errors",
    "recording_session", "serving", "small_input_conf", "spark_session",
    # a source's landing, its plans and its tables
    "Disposition", "Settling", "SourceTables", "StreamPlan", "SystemNames", "TableCheck", "history_table",
    "LoadPackage", "keeps_file_ledger", "known_streams", "landed_packages", "landed_since", "record_changed_files",
    "output_tables", "pending_packages", "raw_schema", "resolve_primary_key", "settling_text", "stream_plans",
    "system_names",
    # normalizing and what it returns or registered
    "LoadResult", "StreamResult", "loads_input_bytes", "normalize_loads", "normalize_source", "pending_input_bytes",
    "rebuild_source_stream", "rebuild_stream", "registered_load_ids", "registered_results",
    "registered_source_results", "source_input_bytes",
    # schemas
    "StreamSchema", "TableSchema", "find_table", "latest_versions", "lineage", "root_table", "schema_document",
    # tables
    "is_delta_table", "is_uri", "key_ordered_tables", "logged_row_count", "logged_version_and_rows", "maintain_tables",
    "read_table", "table_row_count", "table_rows_and_schema", "table_schema", "table_size_bytes",
    # checks
    "data_checks",
    # tables by name and snapshots (`register:`, SPEC §11)
    "Snapshot", "catalog_table_name", "load_table_versions", "publish_tables", "read_snapshot", "snapshot_versions",
    "source_snapshot",
]
