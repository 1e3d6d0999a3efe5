"""`lakenorm demo`: sample packages -> landing sensor -> one run per load ID, on a local instance."""
from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import dagster as dg

from lakenorm_app.commands import sources_input_bytes
from lakenorm_app.samples import SampleSpec, write_catalog, write_sample_packages
from normalization_core.api import LakenormConfig, SourceTables, config_yaml, load_config, read_table, spark_session
from pipeline_assets.definitions import build_definitions
from pipeline_assets.factories import source_job_name

SOURCE = "shop"


@dataclass(frozen=True)
class DemoRun:
    load_id: str
    success: bool


def write_demo_files(root: Path, spec: SampleSpec) -> Path:
    """Sample packages, catalog, configuration and Dagster home under `root`; returns the config file."""
    land_missing_packages(root / "landing" / SOURCE, spec)
    write_catalog(root / "catalog.json")
    config = {"warehouse": "warehouse",
              "sources": [{"name": SOURCE, "landing": f"landing/{SOURCE}", "catalog": "catalog.json",
                           # by name in the embedded metastore beside the warehouse: spark.table("shop.orders")
                           "register": {"schema": SOURCE, "snapshot_views": True}}],
              "spark": {"master": "local[2]"}}
    (root / "lakenorm.yaml").write_text(config_yaml(config))
    home = root / "dagster_home"
    home.mkdir(exist_ok=True)
    (home / "dagster.yaml").write_text(dagster_yaml())
    return root / "lakenorm.yaml"


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


def run_sensor_and_runs(config: LakenormConfig, instance: dg.DagsterInstance) -> list[DemoRun]:
    """One sensor tick per source, its partitions added, then its run requests executed in order."""
    defs = build_definitions(config)
    runs = []
    for source in config.sources:
        sensor = defs.resolve_sensor_def(f"{source.name}_landing_sensor")
        tick = sensor(dg.build_sensor_context(instance=instance, definitions=defs))  # a SensorResult
        for request in tick.dynamic_partitions_requests or []:
            instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
        job = defs.resolve_job_def(source_job_name(source))
        for request in tick.run_requests or []:
            tags = {**request.tags, "dagster/sensor_name": sensor.name, "dagster/run_key": request.run_key}
            result = job.execute_in_process(instance=instance, partition_key=request.partition_key,
                                            tags=tags, raise_on_error=False)
            runs.append(DemoRun(request.partition_key, result.success))
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
    pending = sources_input_bytes(config, config.sources, None)  # the sample packages: a small input's JVM start
    with spark_session(config.spark, input_bytes=pending) as spark, dg.DagsterInstance.get() as instance:
        runs = run_sensor_and_runs(config, instance)
        for run in runs:
            print(f"run for load {run.load_id}: {'success' if run.success else 'FAILED'}")
        if not runs:
            print("no new load packages: every sample package is already registered")
        for source in config.sources:
            tables = SourceTables(config, source)
            for table in tables.stored_tables():
                rows = read_table(spark, tables.path(table)).count()
                print(f"{source.name}.{table:<40} {rows:>8} rows")
    print(f"demo finished in {time.monotonic() - started:.0f} s; tables under {config.warehouse}")
    print(f"open the UI: make ui  (or cd {root / 'dagster_home'} && DAGSTER_HOME=$PWD "
          f"LAKENORM_CONFIG={root / 'lakenorm.yaml'} dagster dev -w <repo>/workspace.yaml)")
    return 0 if all(r.success for r in runs) else 1
