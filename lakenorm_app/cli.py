"""The `lakenorm` console script: the library's commands plus `demo`, which needs Dagster."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from lakenorm_app.commands import CORE_COMMANDS, Command, option
from lakenorm_app.commands import main as run_commands
from lakenorm_app.samples import SampleSpec


def cmd_demo(args: argparse.Namespace) -> int:
    from lakenorm_app.demo import run_demo  # Dagster loads only for this command

    spec = SampleSpec(packages=args.packages, orders=1000, customers=200, events=2000)
    return run_demo(Path(args.root), spec, land_only=args.land_only)


DEMO = Command("demo", "write sample packages under .lakenorm/ and run them through Dagster", cmd_demo, (
    option("--root", default=".lakenorm", help="folder for packages, tables and the Dagster home"),
    option("--packages", type=int, default=3, help="how many sample load packages"),
    option("--land-only", action="store_true",
           help="only land the missing packages; the landing sensor of a running `make ui` runs them"),
))


def main(argv: Sequence[str] | None = None) -> int:
    return run_commands(argv, (*CORE_COMMANDS, DEMO))


if __name__ == "__main__":
    sys.exit(main())
