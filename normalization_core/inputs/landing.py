"""What a source's landing holds, read without normalizing: its complete packages and its streams."""
from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import SparkSession

from normalization_core.configuration.catalog import load_catalog
from normalization_core.configuration.config import LakenormConfig, SourceConfig
from normalization_core.inputs import source_input
from normalization_core.inputs.base import ledger_path
from normalization_core.inputs.ledger import ChangedFile, record_changes
from normalization_core.io.load_packages import Discovery
from normalization_core.schema.stream_settings import StreamSettings


def source_catalog(source: SourceConfig) -> dict[str, StreamSettings]:
    """The configured catalog; without one, the schemas that come with the source's input (SPEC §2.4)."""
    if source.catalog:
        return load_catalog(source.catalog)
    return source_input(source).catalog(source)


def landed_packages(config: LakenormConfig, source: SourceConfig) -> Discovery:
    """Complete units in the landing (any input kind) not yet in the file ledger, and the rejected ones."""
    return source_input(source).discover(config, source)


def keeps_file_ledger(source: SourceConfig) -> bool:
    """Whether the source's input keeps a file ledger (producer files, which carry no manifest)."""
    return source_input(source).uses_ledger


def record_changed_files(spark: SparkSession, config: LakenormConfig, source: SourceConfig,
                         changed: Sequence[ChangedFile]) -> None:
    """What a listing found about files normalized before (`Discovery.changed`), kept in the source's file ledger:
    a file touched with its bytes unchanged is not compared again, a replaced one is not reported again."""
    if changed:
        path = ledger_path(config, source)
        record_changes(spark, path, changed, config.storage_options(path))


def known_streams(config: LakenormConfig, source: SourceConfig) -> list[str]:
    """Streams of the catalog, of the configuration's overrides and `schema_file`, and of the packages landed so far."""
    landed = source_input(source).landed_streams(config, source)
    return sorted(set(source_catalog(source)) | set(source.streams) | set(source.schemas) | landed)
