"""Benchmark: a large code location (many sources x streams) builds and validates quickly, without a JVM.

    .venv/bin/python bench/bench_code_location.py [--sources 50] [--streams 10] [--out bench/out_code_location]

Writes a configuration of `--sources` sources, each with a catalog of `--streams` streams (the sample catalog's
three streams in turn: `append_dedup` orders with child tables, `append_dedup` customers, `append` events), and a
Dagster project (`dg.toml`, a `defs/` folder) around it. Then, for each way of loading lakenorm:
- default: `pipeline_assets.definitions` (keys `[source, table]`),
- translator: `build_definitions(config, translator=...)` with a translator that prefixes every key and sets
  owners,
- component: `LakenormComponent` from a `defs.yaml` (key prefix, owners, tags, an automation condition),
  loaded with `dg.load_from_defs_folder`,
it prints the time to build the Definitions in a fresh process (the import of Dagster and lakenorm apart; the
build, then resolving every job and the asset graph) and the time `dagster definitions validate` takes (the whole
command), each as wall-clock and CPU seconds, and whether a process was started under them (a JVM would be one).
Results go to BENCHMARKS.md by hand, with the date, commit and machine it prints.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

from lakenorm_app.samples import sample_catalog
from normalization_core.api import config_yaml
from peak_rss import children_of

ROOT = Path(__file__).resolve().parents[1]
PROJECT = "lakenorm_bench_project"
WAYS = {"default": "pipeline_assets.definitions", "translator": f"{PROJECT}.translated",
        "component": f"{PROJECT}.definitions"}

TRANSLATED = '''import dagster as dg

from normalization_core.api import load_config
from pipeline_assets.definitions import build_definitions
from pipeline_assets.translator import LakenormTranslator


class LakeTranslator(LakenormTranslator):
    def get_asset_spec(self, props):
        spec = super().get_asset_spec(props)
        return spec.replace_attributes(key=spec.key.with_prefix("lake"), owners=["team:data"])


@dg.definitions
def defs():
    return build_definitions(load_config(), LakeTranslator())
'''

FROM_DEFS_FOLDER = '''from pathlib import Path

import dagster as dg


@dg.definitions
def defs():
    return dg.load_from_defs_folder(path_within_project=Path(__file__).parent)
'''

BUILD = '''
import json, os, sys, time
started, cpu = time.monotonic(), time.process_time()
import dagster as dg, pyspark
from {module} import defs
imported, imported_cpu = time.monotonic(), time.process_time()
built = defs()
done, done_cpu = time.monotonic(), time.process_time()
repository = built.get_repository_def()
jobs, graph = repository.get_all_jobs(), built.resolve_asset_graph()
resolved, resolved_cpu = time.monotonic(), time.process_time()
print(json.dumps({{"import": [imported - started, imported_cpu - cpu], "build": [done - imported, done_cpu - imported_cpu],
                  "resolve": [resolved - done, resolved_cpu - done_cpu], "assets": len(graph.get_all_asset_keys()),
                  "jobs": len(jobs), "sensors": len(repository.sensor_defs),
                  "jvm": pyspark.SparkContext._gateway is not None}}))
'''


def write_configuration(out: Path, sources: int, streams: int) -> Path:
    """`lakenorm.yaml` with `sources` sources sharing one catalog of `streams` streams; returns the file."""
    base = sample_catalog()["streams"]
    catalog = []
    for i in range(streams):
        stream = copy.deepcopy(base[i % len(base)])
        stream["stream"]["name"] = f"{stream['stream']['name']}_{i}"
        catalog.append(stream)
    (out / "catalog.json").write_text(json.dumps({"streams": catalog}), encoding="utf-8")
    for j in range(sources):
        (out / "landing" / f"source_{j}").mkdir(parents=True, exist_ok=True)
    config = {"warehouse": "warehouse", "sources": [
        {"name": f"source_{j}", "landing": f"landing/source_{j}", "catalog": "catalog.json"} for j in range(sources)]}
    (out / "lakenorm.yaml").write_text(config_yaml(config), encoding="utf-8")
    return out / "lakenorm.yaml"


def write_project(out: Path, config: Path) -> Path:
    """A Dagster project around the configuration: `dg.toml`, the package, its `defs/lakenorm/defs.yaml`."""
    project = out / "project"
    package = project / PROJECT
    (package / "defs" / "lakenorm").mkdir(parents=True, exist_ok=True)
    (project / "dg.toml").write_text(f'directory_type = "project"\n\n[project]\nroot_module = "{PROJECT}"\n'
                                     f'code_location_name = "{PROJECT}"\n')
    (package / "__init__.py").write_text("")
    (package / "definitions.py").write_text(FROM_DEFS_FOLDER)
    (package / "translated.py").write_text(TRANSLATED)
    component = {"type": "pipeline_assets.component.LakenormComponent", "attributes": {
        "config_file": str(config), "key_prefix": "lake", "owners": ["team:data"], "tags": {"domain": "bench"},
        "automation_condition": "{{ dg.AutomationCondition.eager() }}"}}
    (package / "defs" / "lakenorm" / "defs.yaml").write_text(yaml.safe_dump(component, sort_keys=False))
    return project


def descendants(pid: int) -> set[str]:
    """Names of the processes under `pid` now."""
    children, pending, names = children_of(), [pid], set()
    while pending:
        for child in children.get(pending.pop(), []):
            pending.append(child)
            try:
                names.add(Path(f"/proc/{child}/comm").read_text().strip())
            except OSError:
                continue
    return names


def watched(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, set[str], str]:
    """Runs `command`: (wall seconds, CPU seconds of it and its children, processes seen under it, stdout)."""
    before, started = os.times(), time.monotonic()
    process = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen: set[str] = set()
    while process.poll() is None:
        seen |= descendants(process.pid)
        time.sleep(0.05)
    out, err = process.communicate()
    wall, after = time.monotonic() - started, os.times()
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{err[-3000:]}")
    return wall, (after.children_user - before.children_user) + (after.children_system - before.children_system), seen, out


def machine() -> str:
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor())
    return f"{os.cpu_count()} cores, {model}, load average {os.getloadavg()[0]:.1f} at the start"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sources", type=int, default=50)
    parser.add_argument("--streams", type=int, default=10)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out_code_location")
    args = parser.parse_args()
    out = args.out.resolve()
    shutil.rmtree(out, ignore_errors=True)
    (out / "dagster_home").mkdir(parents=True)
    (out / "dagster_home" / "dagster.yaml").write_text("telemetry: {enabled: false}\n")
    config = write_configuration(out, args.sources, args.streams)
    project = write_project(out, config)
    env = {**os.environ, "LAKENORM_CONFIG": str(config), "DAGSTER_HOME": str(out / "dagster_home"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), str(project), os.environ.get("PYTHONPATH", "")])}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    print(f"{time.strftime('%Y-%m-%d %H:%M %Z')}, commit {commit.strip()}, {machine()}")
    print(f"{args.sources} sources x {args.streams} streams\n")
    print("| way | assets | jobs | sensors | import s | build s | resolve s | validate s | processes started |")
    print("|---|---|---|---|---|---|---|---|---|")
    for way, module in WAYS.items():
        _, _, seen, report = watched([sys.executable, "-c", BUILD.format(module=module)], env, project)
        built = json.loads(report.strip().splitlines()[-1])
        wall, cpu, seen_validating, _ = watched([sys.executable, "-m", "dagster", "definitions", "validate", "-m",
                                                 module], env, project)
        started = sorted(seen | seen_validating) or ["none"]
        assert not built["jvm"] and "java" not in started, (way, started)
        cells = [f"{built[step][0]:.1f} ({built[step][1]:.1f} CPU)" for step in ("import", "build", "resolve")]
        print(f"| {way} | {built['assets']:,} | {built['jobs']} | {built['sensors']} | {' | '.join(cells)} | "
              f"{wall:.1f} ({cpu:.1f} CPU) | {', '.join(started)} |")


if __name__ == "__main__":
    main()
