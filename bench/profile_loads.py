"""Where a small load's time goes on a young warehouse and on one that has taken hundreds of loads.

    python bench/profile_loads.py --old bench/out_many_loads/engine [--warmup 15] [--loads 4] [--deletion-vectors]

`--old`: what `bench_many_loads.py` left (its `warehouse` and `landing` after N loads; its `staged` packages and
catalog are beside it). In one classic session: the first `--warmup` staged packages go into a new warehouse (the
session warms up), the next `--loads` are timed there (young); then a copy of the old warehouse takes the `--loads`
packages after its N (old). Each load is timed by phase, the wall seconds of each call below (the streams' writes
run side by side, so phases overlap), with its Spark jobs; a Markdown table gives each phase's median, young and
old, and their ratio. `--deletion-vectors`: the source's `append_dedup` tables with deletion vectors (the old
warehouse's are switched on by its first load).
"""
from __future__ import annotations

import argparse
import functools
import importlib
import shutil
import statistics
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from normalization_core.configuration.config import LakenormConfig, load_config  # noqa: E402
from normalization_core.runtime.spark import build_spark_session  # noqa: E402

PHASES = {
    "normalization_core.passes.normalize": ["_classified_lines", "_count_lines", "_write_raw", "_register",
                                            "compact_written"],
    "normalization_core.dispositions.append_dedup": ["find_touched_keys", "replace_slice", "merge_by_key",
                                                     "replace_loads_counted"],
}
"""The calls timed: reading the package, the raw appends, the `append_dedup` tables' writes, registry, compaction."""


class PhaseTimes:
    """Wall seconds of the `PHASES` calls (module attributes wrapped in place), per phase and table."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.lock = threading.Lock()
        for module, names in PHASES.items():
            for name in names:
                self._wrap(importlib.import_module(module), name)

    def _wrap(self, module, name: str) -> None:
        original = getattr(module, name)

        @functools.wraps(original)
        def timed(*args, **kwargs):
            started = time.monotonic()
            try:
                return original(*args, **kwargs)
            finally:
                table = next((a.rsplit("/", 1)[-1] for a in args if isinstance(a, str) and "/" in a), "")
                with self.lock:
                    self.seconds[f"{name} {table}".strip()] += time.monotonic() - started
        setattr(module, name, timed)

    def take(self) -> dict[str, float]:
        with self.lock:
            taken, self.seconds = dict(self.seconds), defaultdict(float)
        return taken


def folder_config(folder: Path, catalog: Path, deletion_vectors: bool) -> LakenormConfig:
    """A configuration of `folder`'s warehouse and landing (source `shop`, as `bench_many_loads.py` names it)."""
    path = folder / "profile.yaml"
    path.write_text(yaml.safe_dump({"warehouse": str(folder / "warehouse"), "spark": {"master": "local[2]"},
                                    "sources": [{"name": "shop", "landing": str(folder / "landing"),
                                                 "catalog": str(catalog), "deletion_vectors": deletion_vectors}]}))
    return load_config(path)


def run_loads(spark, config: LakenormConfig, staged: Path, warmup: list[str], timed: list[str],
              phases: PhaseTimes) -> list[dict[str, float]]:
    from normalization_core.passes.normalize import normalize_load

    folder = Path(config.source("shop").landing).parent
    scheduler = spark.sparkContext._jsc.sc().dagScheduler()
    loads = []
    for n, load_id in enumerate([*warmup, *timed]):
        shutil.copytree(staged / load_id, folder / "landing" / load_id)
        jobs, started = scheduler.numTotalJobs(), time.monotonic()
        phases.take()
        normalize_load(spark, config, "shop", load_id)
        figures = {"load": time.monotonic() - started, **phases.take(), "jobs": scheduler.numTotalJobs() - jobs}
        if n >= len(warmup):
            loads.append(figures)
            print(f"{folder.name} {load_id}: {figures['load']:.2f} s, {figures['jobs']} jobs", flush=True)
    return loads


def report(young: list[dict[str, float]], old: list[dict[str, float]]) -> None:
    print("| phase | young (s) | old (s) | old / young |\n|---|---|---|---|")
    for phase in sorted({*young[0], *old[0]}, key=lambda p: (p not in ("load", "jobs"), p)):
        a, b = (statistics.median(f.get(phase, 0.0) for f in loads) for loads in (young, old))
        print(f"| {phase} | {a:.2f} | {b:.2f} | {b / a:.2f} |" if a else f"| {phase} | {a:.2f} | {b:.2f} | |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", type=Path, required=True, help="a warehouse and landing bench_many_loads.py left")
    parser.add_argument("--warmup", type=int, default=15)
    parser.add_argument("--loads", type=int, default=4)
    parser.add_argument("--deletion-vectors", action="store_true", help="the source's `deletion_vectors` on")
    parser.add_argument("--staged", type=Path, default=None, help="the packages (default: beside --old)")
    parser.add_argument("--young-staged", type=Path, default=None,
                        help="the young warehouse's packages (default: --staged), for an old one built otherwise")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out_profile_loads")
    args = parser.parse_args()
    old_landing, out = args.old.resolve() / "landing", args.out.resolve()
    staged, catalog = (args.staged or args.old.parent / "staged").resolve(), args.old.resolve().parent / "catalog.json"
    young_staged = (args.young_staged or staged).resolve()
    landed = len(list(old_landing.iterdir()))
    ids, young_ids = (sorted(p.name for p in folder.iterdir()) for folder in (staged, young_staged))
    if len(ids) < landed + args.loads or len(young_ids) < args.warmup + args.loads:
        sys.exit(f"{staged} holds {len(ids)} packages: {landed + args.loads} needed (bench_many_loads.py --loads "
                 f"{landed + args.loads} stages them)")
    shutil.rmtree(out, ignore_errors=True)
    (out / "young" / "landing").mkdir(parents=True)
    shutil.copytree(args.old.resolve() / "warehouse", out / "old" / "warehouse")
    shutil.copytree(old_landing, out / "old" / "landing")
    phases = PhaseTimes()
    young_config, old_config = (folder_config(out / name, catalog, args.deletion_vectors) for name in ("young", "old"))
    spark = build_spark_session(young_config.spark, app_name="lakenorm-profile-loads")
    try:
        young = run_loads(spark, young_config, young_staged, young_ids[:args.warmup],
                          young_ids[args.warmup:args.warmup + args.loads], phases)
        old = run_loads(spark, old_config, staged, [], ids[landed:landed + args.loads], phases)
    finally:
        spark.stop()
    print(f"young: loads {args.warmup + 1}-{args.warmup + args.loads}; old: loads {landed + 1}-{landed + args.loads}")
    report(young, old)


if __name__ == "__main__":
    main()
