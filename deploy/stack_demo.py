"""`python -m deploy.stack demo`: sample packages into the stack's bucket, the daemon's runs awaited, the tables
in the bucket listed (row counts from the Delta logs, read with delta-rs: no JVM)."""
from __future__ import annotations

import tempfile
import time
from pathlib import Path

import boto3
import dagster as dg
from dagster._core.instance.ref import InstanceRef  # not exported by dagster 1.13

from lakenorm_app.samples import SampleSpec, write_sample_packages
from normalization_core.configuration.config import load_config
from normalization_core.io.storage import open_delta_table
from normalization_core.plans.source_tables import SourceTables
from pipeline_assets.sensors import loads_of_run

MANIFEST = "_manifest.json"
DONE = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}


def land_in_bucket(stack, packages: int) -> tuple[list[str], list[str]]:
    """The demo's first `packages` sample packages not in the bucket yet, each manifest uploaded after its
    files (a package is complete once its manifest is there); returns all `packages` load IDs and the new ones."""
    from deploy.stack import BUCKET, SOURCE

    client = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{stack.ports()['s3']}", region_name="us-east-1")
    prefix = f"landing/{SOURCE}"
    landed = {o["Key"].split("/")[2] for o in client.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])}
    spec = SampleSpec(packages=packages, orders=1000, customers=200, events=2000)
    with tempfile.TemporaryDirectory() as staging:
        every = write_sample_packages(staging, spec)
        new = [i for i in every if i not in landed]
        for load_id in new:
            files = sorted(p for p in (Path(staging) / load_id).rglob("*") if p.is_file())
            for path in sorted(files, key=lambda p: p.name == MANIFEST):
                client.upload_file(str(path), BUCKET, f"{prefix}/{path.relative_to(staging).as_posix()}")
    return every, new


def wait_for_runs(stack, load_ids: list[str], timeout: float) -> list[dg.DagsterRun]:
    """The runs the landing sensor requests for `load_ids` (one over the loads a tick finds), printed as their state
    changes, until all ended."""
    from deploy.stack import SOURCE

    home = stack.root / "dagster_home"
    deadline = time.monotonic() + timeout
    seen: dict[str, str] = {}
    with dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home))) as instance:
        while time.monotonic() < deadline:
            order = instance.get_dynamic_partitions(f"{SOURCE}_load_ids")
            covered = {r.run_id: loads_of_run(r.tags, order) for r in instance.get_runs()}
            runs = [r for r in instance.get_runs() if set(covered.get(r.run_id, [])) & set(load_ids)]
            for run in runs:
                if seen.get(run.run_id) != run.status.value:
                    seen[run.run_id] = run.status.value
                    print(f"  run {run.run_id[:8]} loads {', '.join(covered[run.run_id])}: {run.status.value}")
            done = {i for r in runs for i in covered[r.run_id]}
            if set(load_ids) <= done and all(r.status in DONE for r in runs):
                return runs
            time.sleep(2)
    print(f"not every run ended within {timeout:.0f} s; see the UI and {stack.root / 'logs'}")
    return []


def report_tables(stack) -> None:
    config = load_config(stack.config_file())
    for source in config.sources:
        for table in SourceTables(config, source).stored_tables():
            path = config.table_path(source.name, table)
            delta = open_delta_table(path, config.storage_options(path))
            rows = sum(delta.get_add_actions(flatten=True).column("num_records").to_pylist())  # log stats
            print(f"{path:<60} version {delta.version():>3} {rows:>8} rows")
    for i, worker in enumerate(sorted(p for p in (stack.root / "spark").glob("worker-*") if p.is_dir())):
        print(f"spark worker {i}: {len(list(worker.glob('app-*/*')))} executor(s) run so far ({worker})")
