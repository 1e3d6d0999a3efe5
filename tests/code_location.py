"""Loading the Dagster code location in a fresh process, which must start no JVM (SPEC §8)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

LOAD_CODE_LOCATION = """
import importlib, json, os, pyspark
keys = {module: [k.to_user_string() for k in importlib.import_module(module).defs().resolve_all_asset_keys()]
        for module in {modules}}

def descendants(pid):
    parents = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = open(f"/proc/{entry}/stat").read()
        except OSError:
            continue
        name, rest = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split()
        parents[int(entry)] = (int(rest[1]), name)
    found, frontier = [], {pid}
    while frontier:
        frontier = {p for p, (parent, _) in parents.items() if parent in frontier}
        found += [parents[p][1] for p in frontier]
    return found

print(json.dumps({"gateway": pyspark.SparkContext._gateway is not None,
                  "context": pyspark.SparkContext._active_spark_context is not None,
                  "children": descendants(os.getpid()), "keys": keys}))
"""


def loaded_without_a_jvm(config: Path) -> set[str]:
    """The code location's asset keys (`pipeline_assets.definitions`), loaded in a fresh process that starts no
    JVM (`locations_loaded_without_a_jvm`)."""
    return locations_loaded_without_a_jvm(config, ["pipeline_assets.definitions"])["pipeline_assets.definitions"]


def locations_loaded_without_a_jvm(config: Path, modules: list[str], path: Path | None = None) -> dict[str, set[str]]:
    """Each code location's asset keys (the `defs` of each module, found also in `path`), loaded in one fresh
    process that starts no JVM: no Spark gateway or context, no child process at all (a JVM would be one)."""
    env = {**os.environ, "LAKENORM_CONFIG": str(config)}
    if path is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(path), env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-c", LOAD_CODE_LOCATION.replace("{modules}", repr(modules))], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert (loaded["gateway"], loaded["context"], loaded["children"]) == (False, False, []), loaded
    return {module: set(keys) for module, keys in loaded["keys"].items()}
