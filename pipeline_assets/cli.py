"""The `lakenorm` console script: the library's commands plus `demo`, which needs Dagster."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from normalization_core import cli as core_cli
from normalization_core.samples import SampleSpec


def add_demo_command(sub: argparse._SubParsersAction) -> None:
    demo = sub.add_parser("demo", help="write sample packages under .lakenorm/ and run them through Dagster")
    demo.add_argument("--root", default=".lakenorm", help="folder for packages, tables and the Dagster home")
    demo.add_argument("--packages", type=int, default=3, help="how many sample load packages")
    demo.add_argument("--land-only", action="store_true",
                      help="only land the missing packages; the landing sensor of a running `make ui` runs them")
    demo.set_defaults(run=cmd_demo)


def cmd_demo(args: argparse.Namespace) -> int:
    from pipeline_assets.demo import run_demo  # Dagster loads only for this command

    spec = SampleSpec(packages=args.packages, orders=1000, customers=200, events=2000)
    return run_demo(Path(args.root), spec, land_only=args.land_only)


def main(argv: Sequence[str] | None = None) -> int:
    return core_cli.main(argv, extend=add_demo_command)


if __name__ == "__main__":
    sys.exit(main())
