"""`make screenshots`: the Dagster pictures of the README and the docs site, taken from a real demo in a real browser.

Runs `lakenorm demo` into a fresh folder (or reuses one with --root), observes the registry and versions
tables (so the graph shows them observed), starts `dagster-webserver` on loopback against it, lets docs/screenshots/shoot.mjs drive Debian's /usr/bin/chromium (playwright-core,
never a downloaded browser) and stops the webserver. Needs `apt-get install chromium` and
`npm ci --prefix docs/screenshots`.
"""
from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg

from normalization_core.configuration.config import load_config
from pipeline_assets.definitions import build_definitions

REPO = Path(__file__).resolve().parent.parent
SHOOTER = REPO / "docs" / "screenshots" / "shoot.mjs"
BIN = Path(sys.executable).parent
READY_TIMEOUT_S = 300  # loading the code location reads the stored schemas; slow on a busy 2-core machine


def run_demo(root: Path) -> None:
    subprocess.run([sys.executable, "-m", "lakenorm_app.cli", "demo", "--root", str(root)], check=True)


def observe_system_tables(root: Path) -> None:
    """Each source's `<source>_observe_system_tables` job, on the demo's instance (delta-rs, no JVM)."""
    config = load_config(root / "lakenorm.yaml")
    defs = build_definitions(config)
    with dg.DagsterInstance.from_config(str(root / "dagster_home")) as instance:
        for source in config.sources:
            job = defs.resolve_job_def(f"{source.name}_observe_system_tables")
            job.execute_in_process(instance=instance)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def webserver(root: Path, port: int) -> Iterator[str]:
    """`dagster-webserver` as `make ui` starts it (from inside the Dagster home); yields its address."""
    home = root / "dagster_home"
    env = {**os.environ, "DAGSTER_HOME": str(home), "LAKENORM_CONFIG": str(root / "lakenorm.yaml")}
    command = [str(BIN / "dagster-webserver"), "-h", "127.0.0.1", "-p", str(port), "-w", str(REPO / "workspace.yaml")]
    # Own process group: the webserver starts a code-server subprocess that must stop with it.
    server = subprocess.Popen(command, cwd=home, env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_answers(f"{url}/server_info", server)
        yield url
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


def wait_until_answers(url: str, server: subprocess.Popen) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"dagster-webserver exited with code {server.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(1)
    raise TimeoutError(f"{url} did not answer within {READY_TIMEOUT_S} s")


def shoot(url: str, out: Path) -> None:
    subprocess.run(["node", str(SHOOTER), url, str(out)], check=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, help="an existing `lakenorm demo` root to reuse (default: run a "
                                                  "new demo in a temporary folder)")
    parser.add_argument("--out", type=Path, default=REPO / "docs", help="folder for the PNG files")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="lakenorm-shots-") as scratch:
        root = args.root.resolve() if args.root else Path(scratch)
        if args.root is None:
            run_demo(root)
        observe_system_tables(root)
        with webserver(root, free_port()) as url:
            shoot(url, args.out.resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
