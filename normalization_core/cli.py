"""`lakenorm normalize | tables | schema | rebuild` (SPEC §9): errors are one line on stderr and a non-zero exit."""
from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import yaml
from pyspark.sql import SparkSession

from normalization_core.config import LakenormConfig, SourceConfig, load_config
from normalization_core.errors import LakenormError
from normalization_core.io.delta import is_delta_table, read_table
from normalization_core.io.spark import build_spark_session
from normalization_core.io.storage import StorePath, is_s3
from normalization_core.io.versions import latest_versions
from normalization_core.pipeline import LoadResult, normalize_loads, pending_packages
from normalization_core.schema import schema_document
from normalization_core.typed_load import stream_plans, versions_path
from normalization_core.rebuild import rebuild_stream

Command = Callable[[argparse.Namespace], int]


def add_core_commands(sub: argparse._SubParsersAction) -> None:
    norm = sub.add_parser("normalize", help="normalize complete packages not yet in the load registry")
    norm.add_argument("--source", help="only this source")
    norm.add_argument("--load-id", action="append", default=[], help="exactly this load ID (repeatable)")
    norm.set_defaults(run=cmd_normalize)
    tables = sub.add_parser("tables", help="list the tables with their row counts")
    tables.add_argument("--source", help="only this source")
    tables.set_defaults(run=cmd_tables)
    schema = sub.add_parser("schema", help="print the current schema of each stream as YAML")
    schema.add_argument("--source", help="only this source")
    schema.add_argument("--stream", help="only this stream")
    schema.set_defaults(run=cmd_schema)
    rebuild = sub.add_parser("rebuild", help="rebuild a stream's typed, history, current and child tables from raw")
    rebuild.add_argument("--source", required=True, help="the stream's source")
    rebuild.add_argument("--stream", required=True, help="the stream to rebuild")
    rebuild.set_defaults(run=cmd_rebuild)


def build_parser(extend: Callable[[argparse._SubParsersAction], None] | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lakenorm", description="Raw JSON load packages -> typed Delta tables.")
    parser.add_argument("--config", help="configuration file (default: $LAKENORM_CONFIG or ./lakenorm.yaml)")
    sub = parser.add_subparsers(dest="command", required=True)
    add_core_commands(sub)
    if extend:
        extend(sub)
    return parser


def main(argv: Sequence[str] | None = None,
         extend: Callable[[argparse._SubParsersAction], None] | None = None) -> int:
    args = build_parser(extend).parse_args(argv)
    try:
        return args.run(args)
    except LakenormError as err:
        print(f"lakenorm: {err}", file=sys.stderr)
        return 2
    except Exception as err:  # noqa: BLE001 - the contract is one line, not a traceback
        if os.environ.get("LAKENORM_DEBUG"):
            raise
        first = (str(err).strip().splitlines() or [""])[0][:300]
        print(f"lakenorm: unexpected {type(err).__name__}: {first} (set LAKENORM_DEBUG=1 for details)",
              file=sys.stderr)
        return 1


def selected_sources(config: LakenormConfig, name: str | None) -> list[SourceConfig]:
    return [config.source(name)] if name else list(config.sources)


def cmd_normalize(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    spark = build_spark_session(config.spark)
    failures = 0
    for source in selected_sources(config, args.source):
        if args.load_id:
            load_ids = list(args.load_id)
        else:
            found = pending_packages(spark, config, source)
            for rejected in found.rejected:
                print(f"lakenorm: {rejected.reason}", file=sys.stderr)
            failures += len(found.rejected)
            load_ids = [p.load_id for p in found.packages]
        failures += normalize_and_report(spark, config, source, load_ids)
        if not load_ids:
            print(f"{source.name}: nothing to normalize")
    return 1 if failures else 0


def normalize_and_report(spark: SparkSession, config: LakenormConfig, source: SourceConfig, load_ids: list[str]) -> int:
    """Normalize the loads (several per pass), print each result and each failing load's error; failures."""
    failed: list[str] = []

    def report(load_id: str, err: Exception) -> None:
        print(f"lakenorm: {err}", file=sys.stderr)
        failed.append(load_id)

    for result in normalize_loads(spark, config, source.name, load_ids, on_error=report):
        print_summary(result)
    return len(failed)


def print_summary(result: LoadResult) -> None:
    """One line per table the load wrote: each stream's raw table, then its typed and child tables."""
    for stream in result.streams.values():
        print(f"{result.source}  {result.load_id}  {stream.raw_table:<40} {stream.raw_lines:>10} rows"
              f"  {stream.rejected_lines} rejected")
        for table, rows in stream.typed_rows.items():
            nulled = stream.nulled.get(table)
            extra = f"  {nulled.values} nulled" if nulled is not None and nulled.values else ""
            print(f"{result.source}  {result.load_id}  {table:<40} {rows:>10} rows{extra}")
    if result.quarantined_lines:
        print(f"{result.source}  {result.load_id}  quarantined lines: {result.quarantined_lines}")


def cmd_tables(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    spark = build_spark_session(config.spark)
    for source in selected_sources(config, args.source):
        for table in list_tables(config, source):
            path = config.table_path(source.name, table)
            if is_delta_table(spark, path):
                print(f"{source.name}.{table:<50} {read_table(spark, path).count():>12} rows")
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    """One YAML document per stream: its newest stored version, else (not normalized yet) the catalog's."""
    config = load_config(args.config)
    spark = build_spark_session(config.spark)
    documents = []
    for source in selected_sources(config, args.source):
        stored = latest_versions(spark, versions_path(config, source))
        current = {s: (None, p.version_hash, p.schema) for s, p in stream_plans(source).items()}
        current.update({s: (v.version, v.version_hash, v.schema) for s, v in stored.items()})
        for stream in sorted(current):
            if args.stream in (None, stream):
                version, version_hash, schema = current[stream]
                documents.append({"source": source.name, "stream": stream, "version": version,
                                  "version_hash": version_hash, "schema": schema_document(schema)})
    if args.stream and not documents:
        raise LakenormError(f"stream {args.stream!r} has no schema yet: normalize a load of it first")
    print(yaml.safe_dump_all(documents, sort_keys=False, allow_unicode=True), end="")
    return 0


def cmd_rebuild(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    spark = build_spark_session(config.spark)
    for table, rows in rebuild_stream(spark, config, args.source, args.stream).items():
        print(f"{args.source}.{table:<50} {rows:>12} rows (rebuilt)")
    return 0


def list_tables(config: LakenormConfig, source: SourceConfig) -> list[str]:
    """Table folders of a local or `s3a://` warehouse (other object stores: use your catalog or `DESCRIBE`)."""
    location = config.table_path(source.name, "").rstrip("/")
    if config.object_store is not None and is_s3(location):
        root: Path | StorePath = StorePath(location, config.object_store)
    elif "://" in location:
        return []
    else:
        root = Path(location)
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / "_delta_log").is_dir())


if __name__ == "__main__":
    sys.exit(main())
