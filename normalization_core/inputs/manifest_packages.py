"""The `packages` input kind: lakenorm's own manifest packages (SPEC §2.1), unchanged."""
from __future__ import annotations

from deltalake.exceptions import DeltaError
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from normalization_core.configuration.config import LakenormConfig, SourceConfig
from normalization_core.inputs.base import InputKind
from normalization_core.inputs.package_listing import (
    Done,
    DoneBefore,
    Listing,
    ListingCursor,
    list_packages,
    package_names,
    read_folders,
)
from normalization_core.io.registry import logged_registry
from normalization_core.io.load_packages import Discovery, LoadPackage, discover_packages, find_package
from normalization_core.io.reader import read_package_lines
from normalization_core.transform import raw as R


class ManifestPackages(InputKind):
    name = "packages"

    def discover(self, config: LakenormConfig, source: SourceConfig) -> Discovery:
        return discover_packages(source.landing, source.name)

    def discover_since(self, config: LakenormConfig, source: SourceConfig, cursor: ListingCursor | None,
                       done: Done, now: float, done_before: DoneBefore | None = None) -> Listing:
        return list_packages(source.landing, source.name, cursor, done, now, done_before=done_before)

    def landed_streams(self, config: LakenormConfig, source: SourceConfig) -> set[str]:
        """The streams of the registry's loads and of the packages not registered: the folder names listed, and
        only those manifests read (loading the code location reads no manifest of a normalized load)."""
        path = config.table_path(source.name, source.naming.names.registry_table)
        try:
            registered = logged_registry(path, config.storage_options(path))
        except DeltaError:
            return super().landed_streams(config, source)
        others = [name for name in package_names(source.landing) if name not in registered]
        landed = {s for found in read_folders(source.landing, source.name, others) if isinstance(found, LoadPackage)
                  for s in found.streams}
        return landed.union(*registered.values())

    def find(self, config: LakenormConfig, source: SourceConfig, load_id: str) -> LoadPackage | None:
        return find_package(source.landing, source.name, load_id)

    def classify(self, spark: SparkSession, package: LoadPackage) -> DataFrame:
        lines = read_package_lines(spark, package)
        created = F.lit(package.created_at).cast("timestamp")
        if package.format == "airbyte":
            return R.airbyte_lines(lines, created)
        return R.record_lines(lines, created)
