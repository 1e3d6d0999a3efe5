"""The documentation site: `mkdocs build --strict` as `make docs` runs it, so a broken link, a missing
anchor or a page left out of the navigation fails the suite; the generated reference pages hold what the code
says (every configuration key, every command)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lakenorm_app.cli import DEMO
from lakenorm_app.commands import CORE_COMMANDS
from normalization_core.api import config_schema

ROOT = Path(__file__).resolve().parents[1]
pytest.importorskip("mkdocs", reason="the docs extra (pip install -e '.[docs]'; `make test` installs it)")


def build(project: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                           str(project / "mkdocs.yml"), "--site-dir", str(site)],
                          capture_output=True, text=True, timeout=300, cwd=project,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    site = tmp_path_factory.mktemp("site")
    done = build(ROOT, site)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    return site


def page(site: Path, path: str) -> str:
    return (site / path / "index.html").read_text(encoding="utf-8")


def test_the_docs_build_strictly_with_every_page_in_the_navigation(site):
    for path in ("getting-started", "concepts/tables", "how-to/backfill", "reference/configuration",
                 "reference/cli", "reference/tables", "reference/dagster", "benchmarks-log", "architecture",
                 "changelog"):
        assert (site / path / "index.html").is_file(), path
    assert (site / "dagster_asset_graph.png").is_file()  # the README's picture, served by the site too
    assert not (site / "make_screenshots.py").exists() and not (site / "hooks").exists()


def schema_keys(node: dict, root: dict) -> set[str]:
    """Every key name the configuration schema defines, at any depth."""
    node = root["$defs"][node["$ref"].rsplit("/", 1)[1]] if "$ref" in node else node
    keys = set(node.get("properties", {}))
    children = [*node.get("properties", {}).values(), *node.get("anyOf", ())]
    children += [node[k] for k in ("items", "additionalProperties") if isinstance(node.get(k), dict)]
    return keys.union(*(schema_keys(child, root) for child in children))


def test_the_configuration_reference_names_every_key_of_the_schema(site):
    schema = config_schema()
    text = page(site, "reference/configuration")
    missing = sorted(k for k in schema_keys(schema, schema) if f"<code>{k}</code>" not in text)
    assert missing == []


def test_the_cli_reference_shows_every_command_and_option(site):
    text = page(site, "reference/cli")
    for command in (*CORE_COMMANDS, DEMO):
        assert f"lakenorm {command.name}" in text
        for argument in command.arguments:
            assert all(flag in text for flag in argument.flags if flag.startswith("--")), argument.flags


def test_the_dagster_reference_lists_a_sources_objects(site):
    text = page(site, "reference/dagster")
    for name in ("shop/_norm_raw_orders", "shop/orders_scd", "shop/orders__line_items", "shop/_norm_loads",
                 "shop_normalize", "shop_rebuild", "shop_landing_sensor", "shop_polling", "primary_key_unique"):
        assert f"<code>{name}</code>" in text, name


def test_a_broken_link_or_a_page_out_of_the_navigation_fails_the_build(tmp_path):
    project = tmp_path / "project"
    shutil.copytree(ROOT / "docs", project / "docs", ignore=shutil.ignore_patterns("node_modules", "*.png"))
    for path in ("mkdocs.yml", "BENCHMARKS.md", "CHANGELOG.md", "deploy/README.md"):  # what the hook reads besides the code
        (project / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / path, project / path)
    for png in (ROOT / "docs").glob("*.png"):
        (project / "docs" / png.name).write_bytes(b"")
    (project / "docs" / "stray.md").write_text("# Not in the navigation\n")
    with (project / "docs" / "how-to" / "rebuild.md").open("a") as page_file:
        page_file.write("\n[a page that does not exist](nowhere.md)\n")
    done = build(project, tmp_path / "site")
    assert done.returncode != 0
    assert "stray.md" in done.stderr and "nowhere.md" in done.stderr


def test_the_readme_is_short_and_its_links_lead_somewhere():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 150
    targets = [t for t in re.findall(r"\]\(([^)#\s]+)", readme) if "://" not in t]
    assert "docs/dagster_asset_graph.png" in targets and "docs/getting-started.md" in targets
    assert [t for t in targets if not (ROOT / t).exists()] == []
    assert "make demo" in readme and "make test" in readme and "make docs" in readme
