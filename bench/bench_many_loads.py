"""Benchmark: a long history of small loads, each normalized as its own load, as the landing sensor runs them.

    python bench/bench_many_loads.py [--loads 300] [--mode both|classic|engine] [--s3] [--out bench/out_many_loads]
    python bench/bench_many_loads.py --listing 10000 [--s3]

N demo-sized packages (the demo's catalog: `orders` append_dedup with its child tables, `customers` append_dedup,
`events` append) are generated once, then landed one after another (moved into the landing, or uploaded to the
bucket with the manifest last). After each lands: the listing a sensor tick makes (`landed_packages`), the pass's
look-up of what is pending (`pending_packages`: listing and registry), then the load normalized alone
(`normalize_load`, what the run a tick requests does), in one warm classic session (`classic`) and, into a
warehouse of its own, as an in-process client of a warm engine (`engine`: `lakenorm engine start`). Per load: wall
time, the machine's CPU seconds and the hypervisor's steal (on a shared host wall time follows the neighbours; CPU
seconds follow the work), Spark jobs (classic), Delta commits, data files per table, the Delta logs' bytes, listing
and registry times. Prints a Markdown table (first loads, loads 11-20, the last ten, their ratios) and writes the
per-load figures (`loads.json`) and a plot (`--plot`, PNG: per-load time and files per table against load number).

`--s3`: landing and warehouse in a bucket of moto's S3 server, started on loopback by this script and stopped at the
end. `--listing N`: only the listing of a landing of N packages, all registered (nothing new): a full listing, then
a sensor tick's and a pass's incremental one.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_jobs import cpu_seconds, processes_started  # noqa: E402  (a script folder, not a package)
from lakenorm_app.samples import SampleSpec, write_catalog, write_sample_packages  # noqa: E402
from normalization_core.configuration.config import LakenormConfig, load_config  # noqa: E402
from normalization_core.io.storage import is_uri, open_delta_table  # noqa: E402
from normalization_core.runtime import engine  # noqa: E402
from normalization_core.runtime.spark import build_spark_session  # noqa: E402

SOURCE = "shop"
PACKAGE = {"orders": 50, "customers": 20, "events": 40}
"""Records per stream of each package: a small, frequent load (an hourly sync of a small shop)."""


PLOTTED_TABLES = {"events": "append", "orders__line_items": "child of append_dedup", "_norm_loads": "registry",
                  "orders_scd": "history"}
"""The tables whose files the plot shows (the others follow one of them)."""


@dataclass
class LoadFigures:
    load: int
    seconds: float
    listing_s: float
    pending_s: float
    jobs: int | None
    commits: int
    log_bytes: int
    files: dict[str, int] = field(default_factory=dict)
    processes: int | None = None
    cpu_s: float | None = None
    """CPU seconds the machine worked during the load (the benchmark's own processes, on a quiet machine)."""
    steal_s: float | None = None
    """CPU seconds the hypervisor took from this machine during the load (a shared host's contention)."""


# ---- the bucket -------------------------------------------------------------------------------------------------

class Bucket:
    """The benchmark's bucket on the local S3 server: packages uploaded into it, its objects listed."""

    def __init__(self, endpoint: str, client, name: str = "lake") -> None:
        self.endpoint, self.client, self.name = endpoint, client, name
        client.create_bucket(Bucket=name)

    def uri(self, prefix: str) -> str:
        return f"s3a://{self.name}/{prefix}"

    def upload_package(self, folder: Path, prefix: str) -> None:
        """The package's files, its manifest last (SPEC §2.1: the manifest's presence means complete)."""
        files = sorted(p for p in folder.rglob("*") if p.is_file())
        for path in sorted(files, key=lambda p: p.name == "_manifest.json"):
            key = f"{prefix}/{folder.name}/{path.relative_to(folder).as_posix()}"
            self.client.upload_file(str(path), self.name, key)

    def sizes(self, prefix: str) -> Iterator[tuple[str, int]]:
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=self.name, Prefix=prefix)
        for page in pages:
            for item in page.get("Contents", []):
                yield item["Key"], item["Size"]


@contextmanager
def s3_server(out: Path) -> Iterator[Bucket]:
    """moto's S3 server in a process of its own on loopback (deploy/services.py), a bucket, test credentials."""
    import boto3

    from deploy.services import free_port, start_s3_server, stop

    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                        "AWS_DEFAULT_REGION": "us-east-1"}.items():
        os.environ[name] = value
    port = free_port()
    server = start_s3_server(port, out / "moto.log")
    try:
        endpoint = f"http://127.0.0.1:{port}"
        yield Bucket(endpoint, boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1"))
    finally:
        stop(server.pid)


# ---- configuration and landing ----------------------------------------------------------------------------------

def write_config(out: Path, name: str, landing: str, warehouse: str, bucket: Bucket | None,
                 remote: str | None = None) -> Path:
    doc: dict = {"warehouse": warehouse, "sources": [{"name": SOURCE, "landing": landing,
                                                       "catalog": str(out / "catalog.json")}],
                 "spark": {"master": "local[2]", **({"remote": remote} if remote else {})}}
    if bucket is not None:
        doc["object_store"] = {"endpoint": bucket.endpoint, "region": "us-east-1"}
    path = out / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def staged_packages(out: Path, loads: int) -> list[str]:
    """N packages generated once under `out/staged` (kept between runs of the same size)."""
    spec = SampleSpec(packages=loads, **PACKAGE)
    staged, marker = out / "staged", out / "staged.txt"
    if not (marker.is_file() and marker.read_text() == repr(spec)):
        shutil.rmtree(staged, ignore_errors=True)
        staged.mkdir(parents=True)
        write_sample_packages(staged, spec)
        marker.write_text(repr(spec))
    write_catalog(out / "catalog.json")
    return sorted(p.name for p in staged.iterdir())


class Landing:
    """Where the packages land one after another: a local folder (moved in) or a bucket prefix (uploaded)."""

    def __init__(self, out: Path, name: str, bucket: Bucket | None) -> None:
        self.staged, self.bucket, self.prefix = out / "staged", bucket, f"{name}/landing"
        self.folder = out / name / "landing"
        if bucket is None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder.mkdir(parents=True)

    @property
    def location(self) -> str:
        return str(self.folder) if self.bucket is None else self.bucket.uri(self.prefix)

    def land(self, load_id: str) -> None:
        if self.bucket is None:
            shutil.copytree(self.staged / load_id, self.folder / load_id)
        else:
            self.bucket.upload_package(self.staged / load_id, self.prefix)


# ---- what the warehouse holds -----------------------------------------------------------------------------------

def table_files(config: LakenormConfig, tables: list[str]) -> dict[str, int]:
    """Data files of each table's newest version, from its log (delta-rs)."""
    files = {}
    for table in tables:
        path = config.table_path(SOURCE, table)
        delta = open_delta_table(path, config.storage_options(path))
        files[table] = 0 if delta is None else delta.get_add_actions(flatten=True).num_rows
    return files


def warehouse_tables(warehouse: str, bucket: Bucket | None) -> list[str]:
    if bucket is None:
        root = Path(warehouse) / SOURCE
        return sorted(p.parent.name for p in root.glob("*/_delta_log")) if root.is_dir() else []
    prefix = warehouse.split("/", 3)[3] + f"/{SOURCE}/"
    return sorted({key[len(prefix):].split("/")[0] for key, _ in bucket.sizes(prefix) if "/_delta_log/" in key})


def log_files(warehouse: str, bucket: Bucket | None) -> tuple[int, int]:
    """(commits, bytes) of every table's Delta log: commit files (`<version>.json`), all of the logs' bytes."""
    if bucket is None:
        entries = [(p.name, p.stat().st_size) for p in Path(warehouse).glob("*/*/_delta_log/*") if p.is_file()]
    else:
        prefix = warehouse.split("/", 3)[3] + "/"
        entries = [(key.rsplit("/", 1)[1], size) for key, size in bucket.sizes(prefix) if "/_delta_log/" in key]
    commits = sum(1 for name, _ in entries if name.endswith(".json") and name.split(".")[0].isdigit())
    return commits, sum(size for _, size in entries)


def checkpoints(warehouse: str, bucket: Bucket | None) -> tuple[int, int]:
    """(checkpoint files, checksum files) in the tables' logs: whether Delta writes them."""
    if bucket is None:
        names = [p.name for p in Path(warehouse).glob("*/*/_delta_log/*")]
    else:
        names = [k.rsplit("/", 1)[1] for k, _ in bucket.sizes(warehouse.split("/", 3)[3] + "/") if "/_delta_log/" in k]
    return sum(1 for n in names if ".checkpoint" in n), sum(1 for n in names if n.endswith(".crc"))


# ---- one series -------------------------------------------------------------------------------------------------

def timed(action: Callable[[], object]) -> tuple[float, object]:
    started = time.monotonic()
    result = action()
    return time.monotonic() - started, result


def run_series(out: Path, name: str, load_ids: list[str], bucket: Bucket | None, remote: str | None
               ) -> list[LoadFigures]:
    """Land each package and normalize it alone (see the module's text); the figures per load."""
    from normalization_core.api import landed_since, pending_packages
    from normalization_core.passes.normalize import normalize_load

    landing = Landing(out, name, bucket)
    partitions: set[str] = set()  # what a sensor registered as partitions
    sensor_cursor = None
    warehouse = str(out / name / "warehouse") if bucket is None else bucket.uri(f"{name}/warehouse")
    if bucket is None:
        shutil.rmtree(warehouse, ignore_errors=True)
    config = load_config(write_config(out, name, landing.location, warehouse, bucket, remote))
    source = config.source(SOURCE)
    spark = build_spark_session(config.spark, app_name=f"lakenorm-bench-many-loads-{name}")
    scheduler = None if remote else spark.sparkContext._jsc.sc().dagScheduler()
    figures = []
    try:
        for n, load_id in enumerate(load_ids, 1):
            landing.land(load_id)
            listing_s, (found, sensor_cursor) = timed(lambda: landed_since(
                config, source, sensor_cursor, lambda packages: {p.load_id for p in packages} & partitions))
            partitions.update(p.load_id for p in found.packages)
            pending_s, pending = timed(lambda: pending_packages(spark, config, source))
            assert [p.load_id for p in pending.packages] == [load_id], (n, load_id, pending.packages)
            jobs, forks = (scheduler.numTotalJobs() if scheduler else None), processes_started()
            busy, stolen = cpu_seconds()
            seconds, _ = timed(lambda: normalize_load(spark, config, SOURCE, load_id))
            cpu_s, steal_s = (after - before for after, before in zip(cpu_seconds(), (busy, stolen)))
            jobs = scheduler.numTotalJobs() - jobs if scheduler else None
            commits, log_bytes = log_files(warehouse, bucket)
            files = table_files(config, warehouse_tables(warehouse, bucket))
            figures.append(LoadFigures(n, seconds, listing_s, pending_s, jobs, commits, log_bytes, files,
                                       processes_started() - forks, cpu_s, steal_s))
            print(f"{name} load {n}: {seconds:.2f} s, CPU {cpu_s:.1f} s, steal {steal_s:.1f} s, {jobs} jobs, "
                  f"listing {listing_s:.3f} s, pending {pending_s:.3f} s, {commits} commits, "
                  f"log {log_bytes / 1e6:.1f} MB, files {max(files.values())} max", flush=True)
        print(f"{name}: checkpoint files, checksum files: {checkpoints(warehouse, bucket)}", flush=True)
    finally:
        if not remote:
            spark.stop()
    return figures


@contextmanager
def warm_engine(out: Path, bucket: Bucket | None, port: int) -> Iterator[str]:
    """A local engine (`lakenorm engine start`, as a user starts it), stopped at the end; its address."""
    os.environ[engine.ENGINE_DIR_ENV] = str(out / "engine")
    remote = f"sc://127.0.0.1:{port}"
    config = write_config(out, "engine_start", str(out), str(out / "engine_start"), bucket, remote)
    lakenorm = str(Path(sys.executable).parent / "lakenorm")
    engine.stop()
    subprocess.run([lakenorm, "--config", str(config), "engine", "start"], check=True)
    try:
        yield remote
    finally:
        engine.stop()


# ---- the listing of a large landing -----------------------------------------------------------------------------

def listing_only(out: Path, packages: int, bucket: Bucket | None) -> list[tuple[str, float]]:
    """A landing of `packages` tiny packages, all registered (as partitions and in the registry): a full listing, a
    sensor tick's and a pass's, with nothing new; and, for comparison, a listing that reads every manifest."""
    from normalization_core.api import landed_packages, landed_since, pending_packages
    from normalization_core.inputs.landing import listing_cursor_location
    from normalization_core.inputs.package_listing import ListingCursor, read_cursor, write_cursor

    staged = out / f"listing_{packages}"
    spec = SampleSpec(packages=packages, orders=1, customers=0, events=0, gzip=False)
    marker = out / f"listing_{packages}.txt"
    if not (marker.is_file() and marker.read_text() == repr(spec)):
        shutil.rmtree(staged, ignore_errors=True)
        write_sample_packages(staged, spec)
        marker.write_text(repr(spec))
    names = sorted(p.name for p in staged.iterdir())
    write_catalog(out / "catalog.json")
    if bucket is None:
        location = str(staged)
    else:
        with ThreadPoolExecutor(max_workers=8) as pool:  # (boto3's clients are thread-safe)
            list(pool.map(lambda folder: bucket.upload_package(folder, "listing"), sorted(staged.iterdir())))
        location = bucket.uri("listing")
    warehouse = str(out / "listing_warehouse") if bucket is None else bucket.uri("listing_warehouse")
    if bucket is None:
        shutil.rmtree(warehouse, ignore_errors=True)
    config = load_config(write_config(out, "listing", location, warehouse, bucket))
    source = config.source(SOURCE)
    spark = build_spark_session(config.spark, app_name="lakenorm-bench-listing")
    try:
        register_all(spark, config, names)
        partitions = set(names)

        def registered(found):
            return {p.load_id for p in found} & partitions

        measures = []

        def measure(what: str, action: Callable[[], object], count: Callable[[object], int]) -> object:
            seconds, found = timed(action)
            measures.append((what.format(count(found)), seconds))
            print(f"| {packages:,} packages{' (S3)' if bucket else ''}: {measures[-1][0]} | {seconds:.3f} s |",
                  flush=True)
            return found

        _, cursor = measure("sensor tick, full listing (no cursor yet): {} new",
                            lambda: landed_since(config, source, None, registered), lambda f: len(f[0].packages))
        measure("sensor tick from its cursor, nothing new: {} new",
                lambda: landed_since(config, source, cursor, registered), lambda f: len(f[0].packages))
        aged = replace(ListingCursor.from_json(cursor), full_at=0.0)  # the last full listing long ago
        measure("sensor tick, the periodic full listing, nothing new: {} new",
                lambda: landed_since(config, source, aged.to_json(), registered,
                                     done_before=lambda ids: set(ids) & partitions), lambda f: len(f[0].packages))
        for what in ("pass, full listing (no cursor yet): {} pending", "pass from its cursor, nothing new: {} pending"):
            measure(what, lambda: pending_packages(spark, config, source), lambda f: len(f.packages))
        write_cursor(listing_cursor_location(config, source), replace(
            read_cursor(listing_cursor_location(config, source)), full_at=0.0))
        measure("pass, the periodic full listing, nothing new: {} pending",
                lambda: pending_packages(spark, config, source), lambda f: len(f.packages))
        if bucket is None:  # (in a bucket: minutes of requests to the local server)
            measure("every manifest read (a tick before cursors): {} listed", lambda: landed_packages(config, source),
                    lambda f: len(f.packages))
    finally:
        spark.stop()
    return measures


def register_all(spark, config: LakenormConfig, load_ids: list[str]) -> None:
    """Every load registered as normalized, in one write (as if each had been normalized)."""
    from datetime import datetime, timezone

    from normalization_core.io.registry import LoadRecord, record_loads
    from normalization_core.plans.source_tables import SourceTables

    now = datetime.now(timezone.utc)
    records = [LoadRecord(SOURCE, "orders", i, now, now, "normalized") for i in load_ids]
    record_loads(spark, SourceTables.of(config, SOURCE).registry_path, load_ids, records)


# ---- report -----------------------------------------------------------------------------------------------------

def window(figures: list[LoadFigures], first: int, last: int, what: Callable[[LoadFigures], float]) -> float | None:
    values = [what(f) for f in figures if first <= f.load <= last]
    return statistics.median(values) if values else None


def report(series: dict[str, list[LoadFigures]]) -> None:
    for name, figures in series.items():
        n = len(figures)
        windows = [(1, 10), (11, 20), (max(21, n - 9), n)] if n > 20 else [(1, min(10, n))]
        print(f"\n{name}: medians per window of loads")
        print("| loads | s per load | CPU s per load | steal % | Spark jobs | commits per load | files, largest table "
              "| log MB | listing s | pending s |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for first, last in windows:
            picked = [f for f in figures if first <= f.load <= last]
            commits = [b.commits - a.commits for a, b in zip(picked, picked[1:])]
            jobs = window(figures, first, last, lambda f: f.jobs if f.jobs is not None else -1)
            print(f"| {first}-{last} | {window(figures, first, last, lambda f: f.seconds):.2f} "
                  f"| {window(figures, first, last, lambda f: f.cpu_s or 0):.1f} "
                  f"| {100 * steal_share(picked):.0f} "
                  f"| {'-' if jobs is None or jobs < 0 else f'{jobs:.0f}'} "
                  f"| {statistics.median(commits) if commits else '-'} "
                  f"| {max(max(f.files.values()) for f in picked)} "
                  f"| {picked[-1].log_bytes / 1e6:.1f} "
                  f"| {window(figures, first, last, lambda f: f.listing_s):.3f} "
                  f"| {window(figures, first, last, lambda f: f.pending_s):.3f} |")
        if n >= 30:
            for what, value in (("wall-clock", lambda f: f.seconds), ("CPU", lambda f: f.cpu_s or 0)):
                early, late = window(figures, 11, 20, value), window(figures, n - 9, n, value)
                print(f"ratio of loads {n - 9}-{n} to loads 11-20, {what} seconds: {late / early:.2f}")
        last = figures[-1]
        print("files per table after the last load: " + ", ".join(f"{t} {c}" for t, c in sorted(last.files.items())))


def steal_share(figures: list[LoadFigures]) -> float:
    """The share of the machine's CPU time the hypervisor took during these loads."""
    stolen = sum(f.steal_s or 0 for f in figures)
    return stolen / (stolen + sum(f.cpu_s or 0 for f in figures) or 1)


def rolling_median(values: list[float], width: int = 10) -> list[float]:
    """Each value's median with the `width - 1` before it."""
    return [statistics.median(values[max(0, i - width + 1):i + 1]) for i in range(len(values))]


def plot(series: dict[str, list[LoadFigures]], path: Path, title: str) -> None:
    try:
        import matplotlib
    except ImportError:
        print("matplotlib is not installed (`pip install .[bench]`): no plot", file=sys.stderr)
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (times, files) = plt.subplots(2, 1, figsize=(8, 6.5), sharex=True)
    for name, figures in series.items():
        times.plot([f.load for f in figures], [f.seconds for f in figures], ".", markersize=3, label=name)
        times.plot([f.load for f in figures], rolling_median([f.seconds for f in figures]), linewidth=1,
                   label=f"{name}, median of 10")
        if all(f.cpu_s is not None for f in figures):
            times.plot([f.load for f in figures], rolling_median([f.cpu_s for f in figures]), linewidth=1,
                       label=f"{name}, CPU seconds, median of 10")
    times.set_ylabel("seconds per load")
    times.set_ylim(bottom=0)
    times.legend()
    times.set_title(title, fontsize=9)
    figures = next(iter(series.values()))
    for table, role in PLOTTED_TABLES.items():
        files.plot([f.load for f in figures], [f.files.get(table, 0) for f in figures], label=f"{role}: {table}",
                   linewidth=1)
    files.set_ylabel("data files per table")
    files.set_xlabel("load number")
    files.set_ylim(bottom=0)
    files.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    print(f"plot: {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--loads", type=int, default=300)
    parser.add_argument("--mode", choices=("both", "classic", "engine"), default="both")
    parser.add_argument("--s3", action="store_true", help="landing and warehouse in a bucket of a local S3 server")
    parser.add_argument("--listing", type=int, metavar="N", help="only the listing of N registered packages")
    parser.add_argument("--engine-port", type=int, default=15093)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out_many_loads")
    parser.add_argument("--plot", type=Path, default=None, help="the PNG (default: <out>/many_loads.png)")
    args = parser.parse_args()
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    with (s3_server(out) if args.s3 else _no_bucket()) as bucket:
        if args.listing:
            listing_only(out, args.listing, bucket)
            return
        load_ids = staged_packages(out, args.loads)
        series: dict[str, list[LoadFigures]] = {}
        if args.mode in ("both", "classic"):
            series["classic session"] = run_series(out, "classic", load_ids, bucket, None)
        if args.mode in ("both", "engine"):
            with warm_engine(out, bucket, args.engine_port) as remote:
                series["warm engine"] = run_series(out, "engine", load_ids, bucket, remote)
    (out / "loads.json").write_text(json.dumps({k: [asdict(f) for f in v] for k, v in series.items()}, indent=1))
    report(series)
    title = (f"{args.loads} loads of {sum(PACKAGE.values())} records each{' (S3)' if args.s3 else ''}, "
             f"{os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}")
    plot(series, args.plot or out / "many_loads.png", title)


@contextmanager
def _no_bucket() -> Iterator[None]:
    yield None


if __name__ == "__main__":
    main()
