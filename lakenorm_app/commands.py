"""`lakenorm normalize | tables | schema | rebuild | engine` (SPEC §9): errors are one line on stderr and a non-zero exit.

Commands are data (`Command`): a front end adds its own (the console script adds `demo`) by passing a
longer tuple to `main`, without reaching into argparse.
"""
from __future__ import annotations

import argparse
import importlib.metadata
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import yaml
from pyspark.sql import SparkSession

from lakenorm_app.progress import Report
from normalization_core.api import (
    LakenormConfig,
    LakenormError,
    Settling,
    SourceConfig,
    SourceTables,
    build_spark_session,
    is_delta_table,
    latest_versions,
    load_config,
    normalize_source,
    pending_input_bytes,
    pending_packages,
    read_table,
    rebuild_stream,
    record_changed_files,
    schema_document,
    serving,
    settling_text,
    snapshot_versions,
    source_input_bytes,
    stream_plans,
)


@dataclass(frozen=True)
class Argument:
    """One option of a command: its flags and `argparse.ArgumentParser.add_argument` keywords."""

    flags: tuple[str, ...]
    options: dict


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    run: Callable[[argparse.Namespace], int]
    arguments: tuple[Argument, ...] = ()


def option(*flags: str, **options) -> Argument:
    return Argument(flags, options)


def installed_version() -> str:
    """lakenorm's version as installed: the one `pyproject.toml` names (its single source; CHANGELOG.md says what
    each version changed)."""
    try:
        return importlib.metadata.version("lakenorm")
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed: pip install -e .)"


def build_parser(commands: Sequence[Command]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lakenorm", description="Raw JSON load packages -> typed Delta tables.")
    parser.add_argument("--version", action="version", version=f"lakenorm {installed_version()}",
                        help="print lakenorm's version and exit")
    parser.add_argument("--config", help="configuration file (default: $LAKENORM_CONFIG or ./lakenorm.yaml)")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in commands:
        child = sub.add_parser(command.name, help=command.help)
        for argument in command.arguments:
            child.add_argument(*argument.flags, **argument.options)
        child.set_defaults(run=command.run)
    return parser


def main(argv: Sequence[str] | None = None, commands: Sequence[Command] | None = None) -> int:
    args = build_parser(CORE_COMMANDS if commands is None else commands).parse_args(argv)
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
    sources = selected_sources(config, args.source)
    if args.wait is not None and args.load_id:
        raise LakenormError("--wait waits for the files of pending loads that are still settling; it does not "
                            "combine with --load-id (a named load is normalized as it is now)")
    report = Report.choose(args.json)
    with serving(config.spark, on_recycle=lambda text: print(f"lakenorm: {text}", file=sys.stderr, flush=True)):
        code = _normalize(args, config, sources, report)
    report.finish()
    return code


def _normalize(args: argparse.Namespace, config: LakenormConfig, sources: list[SourceConfig], report: Report) -> int:
    spark = build_spark_session(config.spark, input_bytes=sources_input_bytes(config, sources, args.load_id))
    if args.load_id:
        return 1 if sum(normalize_and_report(spark, config, s, list(args.load_id), report) for s in sources) else 0
    deadline = None if args.wait is None else time.time() + args.wait
    failures, settling, seen = 0, {}, set[tuple[str, str, str]]()
    for source in sources:
        failed, settling[source.name] = normalize_pending(spark, config, source, seen, report,
                                                          waiting=deadline is not None)
        failures += failed
    while deadline is not None and any(settling.values()) and time.time() < deadline:
        readable = min(s.readable_at.timestamp() for s in settling.values() if s)
        time.sleep(max(0.0, min(readable, deadline) - time.time()) + 0.05)
        for source in sources:
            if settling[source.name]:
                failed, settling[source.name] = normalize_pending(spark, config, source, seen, report, True,
                                                                  again=True)
                failures += failed
    late = {name: s for name, s in settling.items() if s}
    if deadline is not None and late:
        for name, waiting in late.items():
            print(f"lakenorm: {name}: still waiting after {args.wait:g} s: {settling_text(waiting)}; run `lakenorm "
                  "normalize` then, or wait longer (--wait SECONDS)", file=sys.stderr)
        return 1 if failures else WAIT_TIMED_OUT
    return 1 if failures else 0


WAIT_TIMED_OUT = 3
"""Exit status of `lakenorm normalize --wait` when files were still settling once the wait was over."""
DEFAULT_WAIT_SECONDS = 600


def normalize_pending(spark: SparkSession, config: LakenormConfig, source: SourceConfig,
                      seen: set[tuple[str, str, str]], report: Report, waiting: bool = False,
                      again: bool = False) -> tuple[int, Settling | None]:
    """Normalize a source's pending loads and say what is still settling (SPEC §2.4); (failures, settling).

    `seen`: load IDs tried and rejections reported by earlier passes of this command (a pass after waiting
    neither tries a failed load again nor reports a rejection twice); `waiting`: the command waits for
    settling files; `again`: a pass after waiting (it says nothing when it finds nothing)."""
    found = pending_packages(spark, config, source)
    rejected = [r.reason for r in found.rejected if (source.name, "rejected", r.reason) not in seen]
    for reason in rejected:
        report.failed(source.name, None, reason)
    for change in found.changed:  # a replaced file: said once, then recorded (a touched one: recorded silently)
        if change.warning:
            report.warned(source.name, change.warning)
    load_ids = [p.load_id for p in found.packages if (source.name, "load", p.load_id) not in seen]
    seen.update([(source.name, "rejected", r) for r in rejected] + [(source.name, "load", i) for i in load_ids])
    failures = len(rejected) + normalize_and_report(spark, config, source, load_ids, report)
    record_changed_files(spark, config, source, found.changed)
    if found.settling is not None:
        lead = "waiting for " if waiting else "" if load_ids else "nothing to normalize yet; "
        report.settling(source.name, lead, found.settling)
    elif not load_ids and not again:
        report.note(source.name, "nothing to normalize")
    return failures, found.settling


def sources_input_bytes(config: LakenormConfig, sources: list[SourceConfig], load_ids: list[str] | None) -> int | None:
    """What the loads to normalize hold at most (the named ones, else the pending ones), for the JVM's start;
    None when a package cannot be sized."""
    sizes = [source_input_bytes(SourceTables(config, source), load_ids) if load_ids
             else pending_input_bytes(config, source.name) for source in sources]
    return None if None in sizes else sum(sizes)


def normalize_and_report(spark: SparkSession, config: LakenormConfig, source: SourceConfig, load_ids: list[str],
                         report: Report) -> int:
    """Normalize the loads (several per pass), report each result and each failing load's error; failures."""
    failed: list[str] = []

    def on_error(load_id: str, err: Exception) -> None:
        report.failed(source.name, load_id, str(err))
        failed.append(load_id)

    if not load_ids:
        return 0
    report.starting(source.name, load_ids)
    for result in normalize_source(spark, SourceTables(config, source), load_ids, on_error=on_error):
        report.loaded(result)
    report.finished(source.name)
    return len(failed)


def cmd_tables(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    spark = build_spark_session(config.spark)
    for source in selected_sources(config, args.source):
        tables = SourceTables(config, source)
        for table in tables.stored_tables():
            path = tables.path(table)
            if is_delta_table(spark, path):
                print(f"{source.name}.{table:<50} {read_table(spark, path).count():>12} rows")
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    """One YAML document per stream: its newest stored version, else (not normalized yet) the catalog's."""
    config = load_config(args.config)
    spark = build_spark_session(config.spark)
    documents = []
    for source in selected_sources(config, args.source):
        stored = latest_versions(spark, SourceTables(config, source).versions_path)
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


def cmd_snapshot(args: argparse.Namespace) -> int:
    """Per source, the load a snapshot reads (the last complete one, or `--load-id`) and each table's version."""
    config = load_config(args.config)
    spark = build_spark_session(config.spark)
    for source in selected_sources(config, args.source):
        snapshot = snapshot_versions(spark, config, source.name, args.load_id)
        print(f"{source.name}  load {snapshot.load_id}  (complete {snapshot.completed_at:%Y-%m-%d %H:%M:%S} UTC)")
        for table, version in snapshot.versions.items():
            print(f"{source.name}.{table:<50} version {version:>8}")
    return 0


def cmd_engine(args: argparse.Namespace) -> int:
    """`engine start | status | stop`: the local Spark Connect server (`runtime.engine`). Its address and Spark
    settings come from the configuration when there is one (`spark.remote`, `master`, `spark.*`), else
    sc://127.0.0.1:15002 on local[2]; `--port` and `--host` override the address."""
    from normalization_core.api import CONFIG_ENV, DEFAULT_CONFIG_FILE, engine

    has_config = args.config or os.environ.get(CONFIG_ENV) or os.path.isfile(DEFAULT_CONFIG_FILE)
    spark_conf = load_config(args.config).spark if has_config else {"master": "local[2]"}
    host, port = engine.engine_address(spark_conf)
    host, port = args.host or host, args.port or port
    if args.if_remote and not spark_conf.get("remote"):
        print("engine: not used (the configuration names no spark.remote)")
        return 0
    if args.action == "start":
        started = time.time()
        running = engine.start(spark_conf, host=host, port=port)
        fresh = running.started >= started
        print(f"engine: {'started' if fresh else 'already running'} at {running.address} (pid {running.pid}"
              f"{f', {time.time() - started:.1f} s' if fresh else ''}, log {running.log})")
    elif args.action == "status":
        current = engine.status()
        print(current.text())
        return 0 if current.state == "running" else 1
    else:
        stopped = engine.stop()
        print(f"engine: stopped (pid {stopped.pid})" if stopped else "engine: not running")
    return 0


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"not a number of seconds (0 or more): {text!r}")
    return value


ONLY_SOURCE = option("--source", help="only this source")
CORE_COMMANDS: tuple[Command, ...] = (
    Command("normalize", "normalize complete packages not yet in the load registry", cmd_normalize, (
        ONLY_SOURCE, option("--load-id", action="append", default=[], help="exactly this load ID (repeatable)"),
        option("--wait", nargs="?", type=_seconds, const=DEFAULT_WAIT_SECONDS, metavar="SECONDS",
               help="wait up to SECONDS (default %d) for producer files still settling, normalizing them once "
                    "readable; exit status %d if some still settle then" % (DEFAULT_WAIT_SECONDS, WAIT_TIMED_OUT)),
        option("--json", action="store_true",
               help="print the results as one JSON document (loads, errors, notes, seconds per source) for scripts; "
                    "on a terminal it shows progress and a summary table instead of one line per table"))),
    Command("tables", "list the tables with their row counts", cmd_tables, (ONLY_SOURCE,)),
    Command("schema", "print the current schema of each stream as YAML", cmd_schema, (
        ONLY_SOURCE, option("--stream", help="only this stream"))),
    Command("rebuild", "rebuild a stream's typed, history, current and child tables from raw", cmd_rebuild, (
        option("--source", required=True, help="the stream's source"),
        option("--stream", required=True, help="the stream to rebuild"))),
    Command("snapshot", "print each table's Delta version as of the last complete load (or --load-id)",
            cmd_snapshot, (ONLY_SOURCE, option("--load-id", help="as of this complete load"))),
    Command("engine", "start, check or stop the local Spark Connect engine (spark: {remote: sc://host:port})",
            cmd_engine, (
                option("action", choices=("start", "status", "stop")),
                option("--port", type=int, help="port to listen on (default: spark.remote's, else 15002)"),
                option("--host", help="address to listen on (default: spark.remote's host, else 127.0.0.1)"),
                option("--if-remote", action="store_true",
                       help="only when the configuration names a spark.remote (`make ui`): else do nothing"))),
)


if __name__ == "__main__":
    sys.exit(main())
