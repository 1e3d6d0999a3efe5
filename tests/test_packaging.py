"""lakenorm as a Dagster project adds it: its wheel and sdist built from the checkout hold every data file, and
the wheel installs with `uv add` into a new project that `create-dagster project` lays out, with the newest
versions in lakenorm's ranges that the package registry serves; there `dg list components` names the component,
`dg scaffold defs` writes a `defs.yaml` that `dg check defs` and `dagster definitions validate` load."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
UV = Path(sys.executable).parent / "uv"
COMPONENT = "pipeline_assets.component.LakenormComponent"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))

pytestmark = pytest.mark.slow


def run(command: list, cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run([str(part) for part in command], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=900, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"{' '.join(map(str, command))}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    """One temporary folder for the module (the project's venv is about 1 GB), removed at its end."""
    with tempfile.TemporaryDirectory(prefix="lakenorm-packaging-") as folder:
        yield Path(folder)


@pytest.fixture(scope="module")
def env(workdir: Path) -> dict[str, str]:
    """A user's shell: no venv of lakenorm's active, a Dagster home of its own, uv on this interpreter."""
    home = workdir / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry: {enabled: false}\n")
    inherited = {key: value for key, value in os.environ.items()
                 if key not in {"VIRTUAL_ENV", "PYTHONPATH", "LAKENORM_CONFIG", "DAGSTER_HOME"}}
    return {**inherited, "DAGSTER_HOME": str(home), "UV_PYTHON": sys.executable, "UV_PYTHON_DOWNLOADS": "never",
            "UV_NO_PROGRESS": "1", "PATH": os.pathsep.join([str(UV.parent), os.environ.get("PATH", "")])}


@pytest.fixture(scope="module")
def dists(workdir: Path, env: dict[str, str]) -> dict[str, Path]:
    """`uv build` of a copy of the checkout's files (building writes into the source tree): the sdist, then
    the wheel built from it."""
    source = workdir / "source"
    for name in run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], ROOT, env).splitlines():
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    run([UV, "build", "--out-dir", workdir / "dist", source], workdir, env)
    return {"wheel": next((workdir / "dist").glob("*.whl")), "sdist": next((workdir / "dist").glob("*.tar.gz"))}


def package_data() -> set[str]:
    """Every file pyproject.toml's package-data names, as paths in the checkout."""
    return {path.relative_to(ROOT).as_posix()
            for package, patterns in PYPROJECT["tool"]["setuptools"]["package-data"].items()
            for pattern in patterns for path in (ROOT / package).glob(pattern)}


def test_the_wheel_and_the_sdist_hold_every_data_file(dists):
    expected = package_data()
    assert {"normalization_core/configuration/lakenorm.schema.json", "normalization_core/runtime/log4j2.properties",
            "pipeline_assets/dagster.yaml", "lakenorm_app/dagster_project/dg.toml",
            "lakenorm_app/dagster_project/defs/lakenorm/defs.yaml"} <= expected
    wheel = set(zipfile.ZipFile(dists["wheel"]).namelist())
    assert expected <= wheel, expected - wheel
    with tarfile.open(dists["sdist"]) as sdist:
        in_sdist = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    assert expected | {"pyproject.toml", "README.md"} <= in_sdist, expected - in_sdist


def test_the_wheel_declares_ranges_and_registers_the_component_with_dg(dists):
    with zipfile.ZipFile(dists["wheel"]) as wheel:
        dist_info = next(name.split("/")[0] for name in wheel.namelist() if ".dist-info/" in name)
        metadata = wheel.read(f"{dist_info}/METADATA").decode()
        entry_points = wheel.read(f"{dist_info}/entry_points.txt").decode()
    requirements = [line.split(";")[0] for line in re.findall(r"^Requires-Dist: (.+)$", metadata, flags=re.MULTILINE)]
    assert any(r.startswith("dagster<") or r.startswith("dagster>") for r in requirements), requirements
    assert not [r for r in requirements if "==" in r], "exact pins belong in constraints.txt"
    assert "[dagster_dg_cli.registry_modules]\nlakenorm = pipeline_assets.component" in entry_points


def newest_release(requirement: str, env: dict[str, str], workdir: Path) -> str:
    """The newest version the registry serves within `requirement` (`name>=a,<b`)."""
    (workdir / "wanted.in").write_text(requirement + "\n")
    pinned = run([UV, "pip", "compile", "--no-deps", "--no-header", "--no-annotate", "--quiet", "wanted.in"],
                 workdir, env)
    return pinned.strip().split("==")[1]


@pytest.fixture(scope="module")
def project(workdir: Path, env: dict[str, str], dists: dict[str, Path]) -> Path:
    """`create-dagster project` (answering yes to its `uv sync`) of the newest Dagster in lakenorm's range whose
    `dg` the registry serves (the project pins that Dagster and needs `dagster-dg-cli` of the same version), then
    the one line a user changes, then `uv add` of the wheel."""
    dagster_range = next(r for r in PYPROJECT["project"]["dependencies"] if re.match(r"dagster\W", r))
    version = newest_release(dagster_range.replace("dagster", "dagster-dg-cli", 1), env, workdir)
    run([UV, "tool", "run", f"create-dagster@{version}", "project", "--uv-sync", "my-project"], workdir, env)
    project = workdir / "my-project"
    pyproject = project / "pyproject.toml"
    assert f'"dagster=={version}"' in pyproject.read_text()
    requires_python = PYPROJECT["project"]["requires-python"]
    pyproject.write_text(re.sub(r'(?m)^requires-python = .*$', f'requires-python = "{requires_python}"',
                                pyproject.read_text()))
    run([UV, "add", dists["wheel"]], project, env)
    return project


def dg(project: Path, env: dict[str, str], *args: str) -> str:
    return run([project / ".venv" / "bin" / "dg", *args], project, env)


def test_dg_lists_lakenorms_component(project, env):
    listed = json.loads(dg(project, env, "list", "components", "--json"))
    assert COMPONENT in {entry["key"] for entry in listed["items"]}


def test_a_scaffolded_defs_yaml_loads_with_dg_check_defs_and_dagster_definitions_validate(project, env):
    dg(project, env, "scaffold", "defs", COMPONENT, "lakenorm")
    folder = project / "src" / "my_project" / "defs" / "lakenorm"
    declared = yaml.safe_load((folder / "defs.yaml").read_text())
    assert declared == {"type": COMPONENT, "attributes": {"config_file": "../../../../lakenorm.yaml"}}
    config = yaml.safe_load((project / "lakenorm.yaml").read_text())
    assert [source["name"] for source in config["sources"]] == ["example"]
    assert (project / "data" / "landing" / "example").is_dir()

    dg(project, env, "check", "defs")
    run([project / ".venv" / "bin" / "dagster", "definitions", "validate"], project, env)
    defs = json.loads(dg(project, env, "list", "defs", "--json"))
    assert {sensor["name"] for sensor in defs["sensors"]} == {"example_landing_sensor"}
    assert {resource["name"] for resource in defs["resources"]} == {"spark"}
