"""A source's tables by name in the Spark session's catalog (`register:`, SPEC §11).

After each pass, every Delta table of the source not yet in the schema is registered as an external table
(`CREATE TABLE IF NOT EXISTS <schema>.<table> USING delta LOCATION '<path>'`): new streams and new child tables
appear by name with the load that created them; running it again registers nothing. With `snapshot_views`, views
`<schema>_snapshot.<table>` are replaced to read each table as of the last complete load.
"""
from __future__ import annotations

from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from normalization_core import columns as C

from normalization_core.configuration.config import SourceConfig
from normalization_core.configuration.register import Registration
from normalization_core.errors import LakenormError
from normalization_core.io.delta import is_delta_table, read_table
from normalization_core.passes.snapshots import source_snapshot
from normalization_core.plans.source_tables import SourceTables
from normalization_core.transform.sql_text import column_name, string_literal, table_ref


def catalog_table_name(source: SourceConfig, table: str) -> str:
    """The name a table is known by: `<schema>.<table>` when the source registers its tables, else
    `<source>.<table>` (the name Dagster shows: `dagster/table_name`)."""
    return f"{source.register.schema if source.register else source.name}.{table}"


def publish_tables(spark: SparkSession, tables: SourceTables) -> None:
    """After a pass: the source's tables registered, its snapshot views refreshed (nothing without `register`)."""
    registration = tables.source.register
    if registration is None:
        return
    register_tables(spark, tables, registration)
    if registration.snapshot_views:
        refresh_snapshot_views(spark, tables, registration)


def register_tables(spark: SparkSession, tables: SourceTables, registration: Registration) -> list[str]:
    """Register the source's Delta tables missing from the schema; returns the ones registered now."""
    schema = registration.schema
    spark.sql(f"CREATE SCHEMA IF NOT EXISTS {column_name(schema)}")
    known = _schema_tables(spark, schema)
    registered = []
    for table in _source_tables(spark, tables):
        path = tables.path(table)
        if table.lower() in known or not is_delta_table(spark, path, tables.storage_options(path)):
            continue
        try:
            spark.sql(f"CREATE TABLE IF NOT EXISTS {column_name(schema)}.{column_name(table)} USING delta "
                      f"LOCATION {string_literal(path)}")
        except AnalysisException as err:  # another process registered it between the listing and now
            if "ALREADY_EXISTS" not in str(err) and "already exists" not in str(err):
                raise
        registered.append(table)
    return registered


def refresh_snapshot_views(spark: SparkSession, tables: SourceTables, registration: Registration) -> None:
    """Views `<schema>_snapshot.<table>` reading each table `VERSION AS OF` the last complete load's snapshot
    (none yet: a pass over some streams of a load leaves it incomplete until its other streams are in)."""
    try:
        snapshot = source_snapshot(spark, tables)
    except LakenormError:
        return
    schema = registration.snapshot_schema
    spark.sql(f"CREATE SCHEMA IF NOT EXISTS {column_name(schema)}")
    for table, version in snapshot.versions.items():
        spark.sql(f"CREATE OR REPLACE VIEW {column_name(schema)}.{column_name(table)} "
                  f"COMMENT {string_literal(f'{table} as of load {snapshot.load_id}')} "
                  f"AS SELECT * FROM {table_ref(tables.path(table))} VERSION AS OF {int(version)}")


def _schema_tables(spark: SparkSession, schema: str) -> set[str]:
    rows = spark.sql(f"SHOW TABLES IN {column_name(schema)}").collect()  # names in the catalog: metadata
    return {row["tableName"].lower() for row in rows if not row["isTemporary"]}


def _source_tables(spark: SparkSession, tables: SourceTables) -> list[str]:
    """The source's table folders and system tables; in a warehouse `stored_tables` cannot list (an object store
    other than S3), the tables the registry names."""
    names = tables.names
    found = {names.registry_table, names.versions_table, names.loads_table, names.quarantine_table,
             *tables.stored_tables()}
    path = tables.registry_path
    if len(found) == 4 and "://" in path and is_delta_table(spark, path, tables.storage_options(path)):
        rows = read_table(spark, path).select(F.explode(F.map_keys(C.LOADS_ROWS))).distinct().collect()  # names
        found |= {row[0] for row in rows}
    return sorted(found)
