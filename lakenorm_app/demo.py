"""`lakenorm demo`: sample packages -> landing sensor -> its runs, on a local instance, through a local engine."""
from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import dagster as dg
import yaml

from lakenorm_app.samples import SampleSpec, write_catalog, write_sample_packages
from normalization_core.api import (
    LakenormConfig,
    SourceTables,
    config_yaml,
    engine,
    load_config,
    logged_row_count,
)
from pipeline_assets.definitions import build_definitions
from pipeline_assets.factories import source_job_name
from pipeline_assets.partitions import load_ids_partitions
from pipeline_assets.sensors import loads_of_run

SOURCE = "shop"
ENGINE_FOLDER = "engine"
"""The demo's engine state under its root (`.lakenorm/engine`: where `make ui` and `lakenorm engine` look)."""


@dataclass(frozen=True)
class DemoRun:
    load_ids: list[str]
    success: bool


def write_demo_files(root: Path, spec: SampleSpec) -> Path:
    """Sample packages, catalog, configuration and Dagster home under `root`; returns the config file."""
    land_missing_packages(root / "landing" / SOURCE, spec)
    write_catalog(root / "catalog.json")
    config = {"warehouse": "warehouse",
              "sources": [{"name": SOURCE, "landing": f"landing/{SOURCE}", "catalog": "catalog.json",
                           # by name in the embedded metastore beside the warehouse: spark.table("shop.orders")
                           "register": {"schema": SOURCE, "snapshot_views": True}}],
              # every run a client of one local engine (`make ui` starts and stops it), which holds the metastore
              "spark": {"master": "local[2]", "remote": demo_engine_address(root)}}
    (root / "lakenorm.yaml").write_text(config_yaml(config))
    home = root / "dagster_home"
    home.mkdir(exist_ok=True)
    (home / "dagster.yaml").write_text(dagster_yaml())
    return root / "lakenorm.yaml"


def demo_engine_address(root: Path) -> str:
    """The engine the demo's configuration names: the address it named before (a running engine keeps it), else
    127.0.0.1:15002, or a free port when something else listens there."""
    existing = root / "lakenorm.yaml"
    named = (yaml.safe_load(existing.read_text()) or {}).get("spark", {}).get("remote") if existing.is_file() else None
    return named or f"sc://{engine.DEFAULT_HOST}:{engine.free_port(engine.DEFAULT_CONNECT_PORT)}"


@contextmanager
def demo_engine(config: LakenormConfig, directory: Path) -> Iterator[None]:
    """The configuration's engine for a block: the running one, else one started now and stopped afterwards."""
    os.environ[engine.ENGINE_DIR_ENV] = str(directory)  # the runs' `serving` finds it there
    if engine.status(directory).state != "stopped":
        yield
        return
    host, port = engine.engine_address(config.spark)
    started = time.monotonic()
    running = engine.start(config.spark, host=host, port=port, directory=directory)
    print(f"engine started at {running.address} in {time.monotonic() - started:.0f} s (stopped when the demo ends)")
    try:
        yield
    finally:
        engine.stop(directory)


def land_missing_packages(landing: Path, spec: SampleSpec) -> list[str]:
    """Land the spec's packages not landed yet, each moved in complete (a running sensor never sees half
    a package); landed ones stay untouched. Returns the new load IDs."""
    landing.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=landing.parent, prefix=".staging-") as staging:
        new = [i for i in write_sample_packages(staging, spec) if not (landing / i).exists()]
        for load_id in new:
            os.replace(Path(staging) / load_id, landing / load_id)
    return new


def dagster_yaml() -> str:
    """The instance settings shipped with lakenorm (the repository's dagster.yaml)."""
    return resources.files("pipeline_assets").joinpath("dagster.yaml").read_text(encoding="utf-8")


def run_sensor_and_runs(config: LakenormConfig, instance: dg.DagsterInstance, engine_folder: Path) -> list[DemoRun]:
    """One sensor tick per source, its partitions added, then its run requests executed in order (one run over
    the tick's new loads), through the configuration's engine (started only when there is a run)."""
    defs = build_definitions(config)
    ticks = []
    for source in config.sources:
        sensor = defs.resolve_sensor_def(f"{source.name}_landing_sensor")
        tick = sensor(dg.build_sensor_context(instance=instance, definitions=defs))  # a SensorResult
        ticks.append((source, tick))
        for request in tick.dynamic_partitions_requests or []:
            instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
    if not any(tick.run_requests for _, tick in ticks):
        return []
    runs = []
    with demo_engine(config, engine_folder):
        for source, tick in ticks:
            for request in tick.run_requests or []:  # its normalize runs (and a file ledger run of producer files)
                job = defs.resolve_job_def(request.job_name or source_job_name(source))
                tags = {**request.tags, "dagster/sensor_name": f"{source.name}_landing_sensor",
                        "dagster/run_key": request.run_key}
                result = job.execute_in_process(instance=instance, partition_key=request.partition_key,
                                                tags=tags, raise_on_error=False)
                order = instance.get_dynamic_partitions(load_ids_partitions(source).name)
                runs.append(DemoRun(loads_of_run(result.dagster_run.tags, order), result.success))
            if tick.run_requests:  # the registry and versions tables changed: the asset graph shows their state
                defs.resolve_job_def(f"{source.name}_observe_system_tables").execute_in_process(instance=instance)
    return runs


def run_demo(root: Path, spec: SampleSpec, land_only: bool = False) -> int:
    """`land_only`: only land the missing packages, for the landing sensor of a running `make ui`."""
    started = time.monotonic()
    root = root.resolve()
    if land_only:
        landed = land_missing_packages(root / "landing" / SOURCE, spec)
        print(f"landed {len(landed)} new package(s) {', '.join(landed)}: the running landing sensor picks them up")
        return 0
    config = load_config(write_demo_files(root, spec))
    os.environ["DAGSTER_HOME"] = str(root / "dagster_home")
    with dg.DagsterInstance.get() as instance:
        runs = run_sensor_and_runs(config, instance, root / ENGINE_FOLDER)
    for run in runs:
        print(f"run for loads {', '.join(run.load_ids)}: {'success' if run.success else 'FAILED'}")
    if not runs:
        print("no new load packages: every sample package is already registered")
    for source in config.sources:
        tables = SourceTables(config, source)
        for table in tables.stored_tables():
            rows = logged_row_count(tables.path(table), tables.storage_options(tables.path(table)))
            print(f"{source.name}.{table:<40} {rows if rows is not None else '?':>8} rows (from its Delta log)")
    print(f"demo finished in {time.monotonic() - started:.0f} s; tables under {config.warehouse}")
    print(f"open the UI: make ui  (or lakenorm engine start, then cd {root / 'dagster_home'} && DAGSTER_HOME=$PWD "
          f"LAKENORM_CONFIG={root / 'lakenorm.yaml'} dagster dev -w <repo>/workspace.yaml)")
    return 0 if all(r.success for r in runs) else 1
