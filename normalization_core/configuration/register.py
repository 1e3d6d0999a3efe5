"""A source's `register:` setting (SPEC §11): its tables by name in the Spark session's catalog.

`register: {schema: shop}` registers every table lakenorm writes for the source as an external Delta table
`shop.<table>`; `snapshot_views: true` also keeps views `shop_snapshot.<table>` pinned to the last complete load.
A local driver gets Spark's embedded Hive metastore (Derby) beside the warehouse unless the `spark:` settings
choose a catalog themselves (`metastore_defaults`), e.g. a Hive Metastore server (`hive.metastore.uris`).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from normalization_core.io.storage import is_uri

SNAPSHOT_SUFFIX = "_snapshot"
CATALOG_IMPLEMENTATION = "spark.sql.catalogImplementation"
METASTORE_URIS = "hive.metastore.uris"
"""The `spark:` key naming a Hive Metastore server (`thrift://host:port`): the catalog every driver shares."""
METASTORE_FOLDER = "metastore"
"""The embedded metastore's folder, beside a local warehouse (`.lakenorm/warehouse` -> `.lakenorm/metastore`)."""
_METASTORE_URL = "spark.hadoop.javax.jdo.option.ConnectionURL"
_DRIVER_OPTIONS = "spark.driver.extraJavaOptions"


@dataclass(frozen=True)
class Registration:
    """Where a source's tables are registered by name."""

    schema: str
    """The schema (database) of the tables: `<schema>.<table>`."""
    snapshot_views: bool = False
    """Also keep views `<schema>_snapshot.<table>` reading each table as of the last complete load."""

    @property
    def snapshot_schema(self) -> str:
        return f"{self.schema}{SNAPSHOT_SUFFIX}"


def parse_register(doc: Any, where: str) -> Registration | None:
    """A source's `register` mapping, already checked by the configuration's JSON Schema (None: tables stay
    path-based only)."""
    if doc is None:
        return None
    return Registration(schema=doc["schema"], snapshot_views=doc.get("snapshot_views", False))


def metastore_server_settings(spark: Mapping[str, str]) -> dict[str, str]:
    """`spark` plus what `hive.metastore.uris` means to Spark: the Hive catalog (`spark.sql.catalogImplementation`),
    its client pointed at that server (`spark.hadoop.hive.metastore.uris`), unless the settings say otherwise.
    Static settings: a local driver's, or the engine's when it starts (`lakenorm engine start`)."""
    uris = spark.get(METASTORE_URIS)
    if uris is None:
        return dict(spark)
    return {CATALOG_IMPLEMENTATION: "hive", f"spark.hadoop.{METASTORE_URIS}": uris, **spark}


def metastore_defaults(spark: Mapping[str, str], registrations: Sequence[Registration | None],
                       warehouse: str) -> dict[str, str]:
    """`spark` plus Spark's embedded Hive metastore (Derby) under `<warehouse>/../metastore`, when a source
    registers its tables, the warehouse is a local folder, the driver is local and the settings choose no catalog
    (`spark.sql.catalogImplementation`) themselves. Tables registered there outlive the session: a later session
    with the same settings reads `spark.table("shop.orders")`. With `remote`, these settings are the local
    engine's (`lakenorm engine start`; a Spark Connect client ignores static settings). Derby admits one JVM at a
    time: drivers running at once need one engine they all use, or a metastore server (Hive, Unity Catalog).
    """
    if (not any(registrations) or is_uri(warehouse) or CATALOG_IMPLEMENTATION in spark
            or not str(spark.get("master", "local")).startswith("local")):
        return dict(spark)
    root = Path(warehouse).parent / METASTORE_FOLDER
    conf = {CATALOG_IMPLEMENTATION: "hive", "spark.sql.warehouse.dir": str(root / "warehouse"),
            _METASTORE_URL: f"jdbc:derby:;databaseName={root / 'metastore_db'};create=true", **spark}
    home = f"-Dderby.system.home={root}"  # derby.log there, not in the working directory
    conf[_DRIVER_OPTIONS] = f"{spark[_DRIVER_OPTIONS]} {home}" if _DRIVER_OPTIONS in spark else home
    return conf
