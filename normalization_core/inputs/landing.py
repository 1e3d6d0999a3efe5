"""What a source's landing holds, read without normalizing: its complete packages and its streams."""
from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from pyspark.sql import SparkSession

from normalization_core.configuration.catalog import load_catalog
from normalization_core.configuration.config import LakenormConfig, SourceConfig
from normalization_core.inputs import source_input
from normalization_core.inputs.base import ledger_path
from normalization_core.inputs.ledger import ChangedFile, record_changes
from normalization_core.inputs.package_listing import (
    Done,
    DoneBefore,
    Listing,
    ListingCursor,
    read_cursor,
    write_cursor,
)
from normalization_core.io.load_packages import Discovery
from normalization_core.io.storage import Landing, StorePath, is_s3, is_uri
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


def landed_since(config: LakenormConfig, source: SourceConfig, cursor: str | None, done: Done,
                 done_before: DoneBefore | None = None) -> tuple[Discovery, str | None]:
    """`landed_packages` without the units `done` names, listed from a sensor's cursor on (its text; None or
    another text: a full listing; `done_before`: see `package_listing.list_packages`); and the next tick's cursor
    text (None: the input kind keeps none)."""
    listing = source_input(source).discover_since(config, source, ListingCursor.from_json(cursor), done, time.time(),
                                                  done_before)
    return listing.discovery, None if listing.cursor is None else listing.cursor.to_json()


def listed_since_last_pass(config: LakenormConfig, source: SourceConfig, done: Done, keep: bool = True,
                           done_before: DoneBefore | None = None) -> Listing:
    """The landing listed from where the source's last pass's listing ended (`inputs.package_listing`), without the
    units `done` names; `keep`: the cursor is kept for the next pass (in the source's state folder)."""
    location = listing_cursor_location(config, source)
    cursor = None if location is None else read_cursor(location)
    if cursor is None and location is not None:  # a warehouse written before the state folder
        cursor = read_cursor(_state_location(config, source.name, source.naming.names.earlier_listing_file))
    listing = source_input(source).discover_since(config, source, cursor, done, time.time(), done_before)
    if keep and location is not None and listing.cursor is not None and listing.cursor.tells_more_than(cursor):
        write_cursor(location, listing.cursor)
    return listing


LISTING_FILE = "listing.json"


def listing_cursor_location(config: LakenormConfig, source: SourceConfig) -> Landing | None:
    """Where the passes over a source keep their listing cursor: `<warehouse>/<source>/_norm_state/listing.json`
    (`_dlt_state/`, ... per convention), out of the tables' way; None for a warehouse in an object store other
    than S3."""
    return _state_location(config, source.name, f"{source.naming.names.state_folder}/{LISTING_FILE}")


def _state_location(config: LakenormConfig, source: str, name: str) -> Landing | None:
    location = config.table_path(source, name)
    if is_s3(location) and config.object_store is not None:
        return StorePath(location, config.object_store)
    return None if is_uri(location) else Path(location)


def known_streams(config: LakenormConfig, source: SourceConfig) -> list[str]:
    """Streams of the catalog, of the configuration's overrides and `schema_file`, and of the packages landed so far."""
    landed = source_input(source).landed_streams(config, source)
    return sorted(set(source_catalog(source)) | set(source.streams) | set(source.schemas) | landed)
