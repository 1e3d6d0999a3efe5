"""Exceptions of normalization_core. Each carries the fields a user needs to act on it."""
from __future__ import annotations


class LakenormError(Exception):
    """Base class: `str(err)` is one line saying what, where and what to do."""


class ConfigError(LakenormError):
    """The configuration file or the catalog is invalid."""

    def __init__(self, where: str, message: str) -> None:
        self.where = where
        super().__init__(f"configuration error in {where}: {message}")


class PackageError(LakenormError):
    """A load package is invalid or unreadable: only that package is rejected."""

    def __init__(self, load_id: str, message: str, file: str | None = None) -> None:
        self.load_id = load_id
        self.file = file
        where = f"load package {load_id!r}" + (f", file {file!r}" if file else "")
        super().__init__(f"{where}: {message}")


class UnknownLoadError(LakenormError):
    """A load ID asked for is not a complete package in the landing folder."""

    def __init__(self, source: str, load_id: str, landing: str) -> None:
        self.source = source
        self.load_id = load_id
        super().__init__(
            f"source {source!r}: no complete load package {load_id!r} in {landing} "
            "(is its _manifest.json written yet?)")


class ContractViolation(LakenormError):
    """A load would change a stream's schema that its `schema_contract` freezes: nothing of it is committed."""

    def __init__(self, source: str, stream: str, entity: str, change: str) -> None:
        self.source, self.stream, self.entity = source, stream, entity
        super().__init__(
            f"source {source!r}, stream {stream!r}: schema contract on {entity!r} is 'freeze' but the load would "
            f"{change}; nothing of the load was committed: set "
            f"schema_contract.{entity} to 'evolve' to accept the change, or fix the data")


class NotNullViolation(LakenormError):
    """Records lack a value for a column hinted `nullable: false`: nothing of the load is committed."""

    def __init__(self, source: str, stream: str, column: str, records: int) -> None:
        self.source, self.stream, self.column, self.records = source, stream, column, records
        super().__init__(
            f"source {source!r}, stream {stream!r}: column {column!r} is hinted nullable: false but {records} "
            f"record(s) of the load have no value for it (null or missing); nothing of the load was committed")
