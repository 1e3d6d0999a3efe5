"""Object-store locations (`s3a://bucket/prefix`): settings, and a path over them for discovery.

Spark reads and writes `s3a://` through Hadoop's S3A connector (`spark.hadoop.fs.s3a.*`); discovery and the
small metadata reads without a JVM (listings, manifests, first lines, the file ledger and stored schemas
read with delta-rs) go through Arrow's S3 client with the same endpoint and credentials. Credentials are
never configuration: they come from the environment (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
`AWS_SESSION_TOKEN`), else each client's default AWS chain (profile, instance role).
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import IO
from urllib.parse import urlsplit

from normalization_core.runtime.credentials import env_credentials

S3_SCHEMES = ("s3a://",)
"""Hadoop 3 serves only `s3a://` (no `s3://` file system)."""


def is_uri(location: str) -> bool:
    return "://" in str(location)


def is_s3(location: str) -> bool:
    return str(location).startswith(S3_SCHEMES)


@dataclass(frozen=True)
class ObjectStore:
    """The configuration's `object_store:` section (SPEC §2.3): where `s3a://` URIs are served."""

    endpoint: str | None = None
    """An S3-compatible server (`http://host:port`); None: AWS itself."""
    region: str | None = None
    path_style_access: bool | None = None
    """`bucket` in the path, not the host name; default: on with an `endpoint`, off for AWS."""

    @property
    def path_style(self) -> bool:
        return self.path_style_access if self.path_style_access is not None else self.endpoint is not None

    def hadoop_conf(self) -> dict[str, str]:
        """Non-secret S3A settings (Spark: `spark.hadoop.` + key)."""
        conf = {"fs.s3a.path.style.access": str(self.path_style).lower()}
        if self.endpoint:
            conf["fs.s3a.endpoint"] = self.endpoint
            conf["fs.s3a.connection.ssl.enabled"] = str(self.endpoint.startswith("https://")).lower()
        if self.region:
            conf["fs.s3a.endpoint.region"] = self.region
        return conf

    def storage_options(self) -> dict[str, str]:
        """delta-rs (`object_store`) options: endpoint, region and the environment's credentials."""
        options = {key: value for key, value in env_credentials().items()}
        options["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"] = str(not self.path_style).lower()
        if self.endpoint:
            options["AWS_ENDPOINT_URL"] = self.endpoint
            options["AWS_ALLOW_HTTP"] = str(self.endpoint.startswith("http://")).lower()
        if self.region:
            options["AWS_REGION"] = self.region
        return options


@lru_cache(maxsize=8)
def _filesystem(store: ObjectStore, credentials: tuple[tuple[str, str], ...]):
    from pyarrow import fs

    creds = dict(credentials)
    options: dict = {"region": store.region or "us-east-1", "force_virtual_addressing": not store.path_style}
    if "AWS_ACCESS_KEY_ID" in creds and "AWS_SECRET_ACCESS_KEY" in creds:
        options.update(access_key=creds["AWS_ACCESS_KEY_ID"], secret_key=creds["AWS_SECRET_ACCESS_KEY"],
                       session_token=creds.get("AWS_SESSION_TOKEN"))
    if store.endpoint:
        url = urlsplit(store.endpoint)
        options.update(endpoint_override=url.netloc, scheme=url.scheme or "https")
    return fs.S3FileSystem(**options)


@lru_cache(maxsize=8)
def _s3_client(store: ObjectStore, credentials: tuple[tuple[str, str], ...]):
    """An S3 client (boto3) for listings Arrow's client cannot make (`start-after`); credentials as `_filesystem`."""
    import boto3
    from botocore.config import Config

    creds, keys = dict(credentials), {}
    if "AWS_ACCESS_KEY_ID" in creds and "AWS_SECRET_ACCESS_KEY" in creds:
        keys = {"aws_access_key_id": creds["AWS_ACCESS_KEY_ID"],
                "aws_secret_access_key": creds["AWS_SECRET_ACCESS_KEY"], "aws_session_token": creds.get("AWS_SESSION_TOKEN")}
    return boto3.client("s3", endpoint_url=store.endpoint, region_name=store.region or "us-east-1",
                        config=Config(s3={"addressing_style": "path" if store.path_style else "virtual"}), **keys)


class StorePath:
    """An object-store URI with the few `pathlib.Path` operations discovery uses (join, name, list, read)."""

    def __init__(self, uri: str, store: ObjectStore, kind: str | None = None) -> None:
        if not is_s3(uri):
            raise ValueError(f"not an s3a:// URI: {uri!r}")
        scheme, rest = uri.split("://", 1)
        self.scheme, self.key, self.store = scheme, rest.strip("/"), store
        self._kind = kind  # "file" / "dir" when known from a listing

    def __str__(self) -> str:
        return f"{self.scheme}://{self.key}"

    def __repr__(self) -> str:
        return f"StorePath({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StorePath) and str(self) == str(other)

    def __hash__(self) -> int:
        return hash(str(self))

    def __lt__(self, other: StorePath) -> bool:
        return str(self) < str(other)

    def __truediv__(self, relative: str | PurePosixPath) -> StorePath:
        return StorePath(f"{self}/{str(relative).strip('/')}", self.store)

    @property
    def name(self) -> str:
        return PurePosixPath(self.key).name

    @property
    def parent(self) -> StorePath:
        return StorePath(f"{self.scheme}://{PurePosixPath(self.key).parent}", self.store)

    @property
    def fs(self):
        return _filesystem(self.store, tuple(sorted(env_credentials().items())))

    def resolve(self) -> StorePath:
        return self  # no symlinks; `..` is refused before paths are joined

    def is_relative_to(self, other: StorePath) -> bool:
        return self.key == other.key or self.key.startswith(other.key + "/")

    def _type(self) -> str | None:
        if self._kind is None:
            from pyarrow import fs

            found = self.fs.get_file_info(self.key).type
            self._kind = {fs.FileType.File: "file", fs.FileType.Directory: "dir"}.get(found)
        return self._kind

    def is_file(self) -> bool:
        return self._type() == "file"

    def is_dir(self) -> bool:
        return self._type() == "dir"

    def exists(self) -> bool:
        return self._type() is not None

    def iterdir(self) -> Iterator[StorePath]:
        from pyarrow import fs

        for info in self.fs.get_file_info(fs.FileSelector(self.key, allow_not_found=True)):
            kind = "dir" if info.type == fs.FileType.Directory else "file"
            yield StorePath(f"{self.scheme}://{info.path}", self.store, kind)

    def walk_files(self) -> Iterator[tuple[str, int, int]]:
        """(path relative to this folder, size, modified ms) of every object under it."""
        from pyarrow import fs

        for info in self.fs.get_file_info(fs.FileSelector(self.key, recursive=True, allow_not_found=True)):
            if info.type == fs.FileType.File:
                modified = int(info.mtime.timestamp() * 1000) if info.mtime is not None else 0
                yield info.path[len(self.key) + 1:], int(info.size or 0), modified

    def folder_names(self, after: str = "") -> list[str]:
        """Names of the folders directly under this one that sort after `after`, sorted: S3 lists them from
        `after` on (`start-after`), so the listing's cost follows what is new, not what the folder holds."""
        bucket, _, key = self.key.partition("/")
        prefix = f"{key.rstrip('/')}/" if key else ""
        listing = {"Bucket": bucket, "Prefix": prefix, "Delimiter": "/",
                   **({"StartAfter": prefix + after} if after else {})}
        pages = _s3_client(self.store, tuple(sorted(env_credentials().items()))).get_paginator("list_objects_v2")
        names = (common["Prefix"][len(prefix):].rstrip("/") for page in pages.paginate(**listing)
                 for common in page.get("CommonPrefixes", []))
        return sorted(name for name in names if name > after)

    def write_text(self, text: str, encoding: str = "utf-8") -> None:
        """The object's content replaced by `text` (one PUT: readers see the old content or the new)."""
        with self.fs.open_output_stream(self.key) as handle:
            handle.write(text.encode(encoding))

    def size(self) -> int:
        return int(self.fs.get_file_info(self.key).size or 0)

    def open_binary(self) -> IO[bytes]:
        return self.fs.open_input_stream(self.key, compression=None)

    def etag(self) -> str | None:
        """The object's ETag as the store returns it (one HEAD request), None when it gives none."""
        with self.fs.open_input_file(self.key) as handle:
            found = handle.metadata().get("ETag")
        return found.decode() if found else None

    def read_bytes(self) -> bytes:
        with self.open_binary() as handle:
            return handle.read()

    def read_text(self, encoding: str = "utf-8") -> str:
        return self.read_bytes().decode(encoding)


Landing = Path | StorePath
"""A landing: a local folder or an `s3a://` URI."""


def open_delta_table(path: str, storage_options: dict[str, str] | None):
    """The delta-rs table at `path` (local or `s3a://`), None when there is none: small metadata reads
    without a JVM. (Reads only: delta-rs never writes lakenorm's tables, so no S3 lock is needed.)

    A `_delta_log` without a commit yet (another writer creating the table right now) is no table either."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    if not is_uri(path) and not Path(path, "_delta_log").is_dir():
        return None
    try:
        return DeltaTable(path, storage_options=storage_options if is_uri(path) else None)
    except TableNotFoundError:
        return None
