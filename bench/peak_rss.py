"""Peak memory of a whole process tree: runs a command and samples, every `--every` seconds, the summed
resident set size of the command's process and all its descendants (the Python driver, its JVM, Python
workers), read from /proc. Prints the command's wall time and the peak; exits with the command's code.

    python bench/peak_rss.py [--every 0.25] -- python bench/bench_normalize.py --packages 10 --orders 100000

A process living shorter than one interval can be missed; the JVM, which holds nearly all of it, is not.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

PAGE_KIB = 4


def children_of() -> dict[int, list[int]]:
    """Parent pid -> child pids of every live process."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    return children


def tree_rss_kib(root: int) -> int:
    """Summed RSS (KiB) of `root` and its descendants."""
    children, pending, total = children_of(), [root], 0
    while pending:
        pid = pending.pop()
        pending += children.get(pid, [])
        try:
            total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE_KIB
        except OSError:
            continue
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--every", type=float, default=0.25, help="seconds between samples")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    started = time.monotonic()
    process = subprocess.Popen(command)
    peak = 0
    while process.poll() is None:
        peak = max(peak, tree_rss_kib(process.pid))
        time.sleep(args.every)
    print(f"peak RSS of the process tree: {peak / 1024 / 1024:.2f} GiB; wall {time.monotonic() - started:.1f} s",
          flush=True)
    sys.exit(process.returncode)


if __name__ == "__main__":
    main()
