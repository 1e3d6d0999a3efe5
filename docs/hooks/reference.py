"""MkDocs hook (mkdocs.yml `hooks:`): the reference pages, generated at build time from the code they describe
rather than copied by hand, so they cannot go stale:

- `reference/configuration.md` from the configuration's JSON Schema (`lakenorm.schema.json`);
- `reference/cli.md` from the `lakenorm` command's argparse parser;
- `reference/tables.md` from the system names of each convention (`normalization_core/columns.py`);
- `reference/dagster.md` from the Dagster definitions lakenorm builds for the demo's source;
- `benchmarks-log.md`: the repository's BENCHMARKS.md as it is (every benchmark's figures and history);
- `changelog.md`: the repository's CHANGELOG.md as it is (the release notes);

and a page's `<!-- include deploy/README.md "## Heading" -->` is replaced by that section of that repository
file (its relative links as plain text), so the deployment's facts have one home.
"""
from __future__ import annotations

import argparse
import ast
import inspect
import json
import os
import re
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

REPO = Path(__file__).resolve().parents[2]
GENERATED = "<!-- Generated at build time by docs/hooks/reference.py: edit the code it is generated from. -->\n\n"


def on_files(files: Files, config: Any) -> Files:
    sys.path.insert(0, str(REPO))  # this checkout's code, whichever checkout the environment installed
    pages = {
        "reference/configuration.md": configuration_reference,
        "reference/cli.md": cli_reference,
        "reference/tables.md": tables_reference,
        "reference/dagster.md": dagster_reference,
        "benchmarks-log.md": lambda: (REPO / "BENCHMARKS.md").read_text(encoding="utf-8"),
        "changelog.md": lambda: (REPO / "CHANGELOG.md").read_text(encoding="utf-8"),
    }
    for path, generate in pages.items():
        files.append(File.generated(config, path, content=generate()))
    return files


INCLUDE = re.compile(r'<!-- include (\S+) "(#+ [^"]+)" -->')


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    return INCLUDE.sub(lambda m: repo_section(m.group(1), m.group(2)), markdown)


def repo_section(path: str, heading: str) -> str:
    """The section of a repository file under `heading`, up to the next heading of its level or above."""
    lines = (REPO / path).read_text(encoding="utf-8").splitlines()
    start = lines.index(heading)
    level = heading.split(" ")[0]
    end = next((i for i in range(start + 1, len(lines))
                if lines[i].startswith("#") and lines[i].split(" ")[0] in {level[:n] for n in range(1, len(level) + 1)}
                and not _in_code(lines[:i])), len(lines))
    text = "\n".join(lines[start:end])
    return re.sub(r"\[([^\]]+)\]\((?!https?:)[^)]+\)", r"\1", text) + "\n"


def _in_code(lines: list[str]) -> bool:
    return sum(line.startswith("```") for line in lines) % 2 == 1


# --- configuration ---------------------------------------------------------------------------------------------

def configuration_reference() -> str:
    from normalization_core.api import config_schema, schema_path

    schema = config_schema()
    out = [GENERATED, "# Configuration reference\n\n",
           f"{schema['description']}\n\n",
           "Every key `lakenorm.yaml` accepts, from its JSON Schema "
           f"(`normalization_core/configuration/{schema_path().name}`, shipped in the package). Editors that read "
           "JSON Schemas (VS Code and others through yaml-language-server) check and complete the file when its "
           "first line names the schema, as the files `make demo` and `make stack-up` write do:\n\n",
           "```yaml\n# yaml-language-server: $schema=<lakenorm's checkout>/normalization_core/configuration/"
           f"{schema_path().name}\n```\n\n",
           "How the settings work together: [Configure lakenorm](../how-to/configuration.md).\n\n"]
    for title, node in _sections(schema, schema, ""):
        out.append(f"## `{title}`\n\n" if title else "## Top level\n\n")
        if node.get("description") and title:
            out.append(f"{node['description']}\n\n")
        required = set(node.get("required", ()))
        out.append("| key | type | default | description |\n|---|---|---|---|\n")
        for key, spec in node.get("properties", {}).items():
            resolved = _resolve(schema, spec)
            default = f"`{json.dumps(resolved['default'])}`" if "default" in resolved else (
                "required" if key in required else "")
            out.append(f"| `{key}` | {_type(schema, spec)} | {default} | {_cell(resolved.get('description', ''))} |\n")
        for pattern, spec in node.get("patternProperties", {}).items():
            out.append(f"| `{pattern.lstrip('^').replace(chr(92), '')}*` | {_type(schema, spec)} | | "
                       f"{_cell(spec.get('description', ''))} |\n")
        out.append("\n")
    out.append("## The schema\n\n```json\n" + json.dumps(schema, indent=2) + "\n```\n")
    return "".join(out)


def _sections(root: dict, node: dict, path: str) -> list[tuple[str, dict]]:
    """(key path, object schema) of every object with named keys, depth first in the schema's order."""
    node = _resolve(root, node)
    found = []
    objects = [b for b in node.get("anyOf", ()) if "properties" in _resolve(root, b)]
    if "properties" in node:
        found.append((path, node))
    for branch in objects:
        found += _sections(root, branch, path)
    for key, spec in node.get("properties", {}).items():
        found += _sections(root, spec, f"{path}.{key}" if path else key)
    if isinstance(node.get("additionalProperties"), dict):
        found += _sections(root, node["additionalProperties"], f"{path}.<name>")
    if isinstance(node.get("items"), dict):
        found += _sections(root, node["items"], f"{path}[]")
    return found


def _resolve(root: dict, spec: dict) -> dict:
    ref = spec.get("$ref", "")
    if ref.startswith("#/$defs/"):
        return {**_resolve(root, root["$defs"][ref.rsplit("/", 1)[1]]), **{k: v for k, v in spec.items() if k != "$ref"}}
    return spec


def _type(root: dict, spec: dict) -> str:
    spec = _resolve(root, spec)
    if "enum" in spec:
        return "one of " + ", ".join(f"`{v}`" for v in spec["enum"])
    if "anyOf" in spec:
        return " or ".join(_type(root, branch) for branch in spec["anyOf"])
    types = spec.get("type", "any")
    words = {"object": "mapping", "array": "list", "string": "text", "integer": "integer", "boolean": "boolean",
             "number": "number", "null": "null"}
    text = " or ".join(words.get(t, t) for t in ([types] if isinstance(types, str) else types))
    if "items" in spec:
        items = _type(root, spec["items"])
        text += f" of ({items})" if " or " in items else f" of {items}"
    if isinstance(spec.get("additionalProperties"), dict):
        text += f" of name: {_type(root, spec['additionalProperties'])}"
    if "minimum" in spec:
        text += f", at least {spec['minimum']}"
    if "pattern" in spec:
        text += f" matching `{spec['pattern']}`"
    return text


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


# --- command line ----------------------------------------------------------------------------------------------

def cli_reference() -> str:
    from lakenorm_app.cli import DEMO
    from lakenorm_app.commands import CORE_COMMANDS, build_parser

    os.environ["COLUMNS"] = "100"  # argparse wraps its help to the terminal: the same width on every machine
    parser = build_parser((*CORE_COMMANDS, DEMO))
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {c.dest: c.help for c in commands._choices_actions}
    out = [GENERATED, "# Command line reference\n\n",
           "The `lakenorm` console script, installed with the package. Errors print one line on stderr and exit "
           "non-zero (`LAKENORM_DEBUG=1` shows tracebacks). Generated from the command's own parser.\n\n",
           "| command | what it does |\n|---|---|\n",
           *(f"| [`lakenorm {name}`](#lakenorm-{name}) | {_cell(helps[name])} |\n" for name in commands.choices),
           "\n## `lakenorm`\n\n```text\n", parser.format_help(), "```\n\n"]
    for name, sub in commands.choices.items():
        out += [f"## `lakenorm {name}` {{#lakenorm-{name}}}\n\n{helps[name]}.\n\n```text\n", sub.format_help(), "```\n\n"]
    return "".join(out)


# --- tables and system columns ---------------------------------------------------------------------------------

def tables_reference() -> str:
    from normalization_core import columns
    from normalization_core.inputs.ledger import ledger_table
    from normalization_core.naming.conventions import CONVENTIONS

    docs = _attribute_docs(inspect.getsource(columns))
    names = {name: c.system_names for name, c in CONVENTIONS.items()}
    head = "| | " + " | ".join(f"`{n}`" for n in names) + " | what |\n" + "|---" * (len(names) + 2) + "|\n"
    out = [GENERATED, "# Tables and system columns\n\n",
           "The tables lakenorm writes for a source and the names of its system columns under each convention "
           "(a source's `convention`; `direct` shares `dlt`'s system names). Generated from "
           "`normalization_core/columns.py`. What each table holds: [Tables](../concepts/tables.md); how data "
           "columns and child tables are named: [Conventions and layouts](../concepts/conventions.md).\n\n",
           "## Tables of a source\n\nFor a stream `orders` (under `<warehouse>/<source>/`):\n\n", head]
    tables = [
        ("raw table", lambda s: s.raw_table("orders"), docs["raw_table_prefix"]),
        ("history (`append_dedup`)", lambda s: s.history_table("orders"),
         "SCD type 2: every version of every key."),
        ("current / typed root", lambda s: "orders", "The stream's typed root table (current versions for "
                                                       "`append_dedup`)."),
        ("child table", lambda s: "orders__line_items" if s.prefix != "_airbyte" else "orders_line_items",
         "One per nested array (and, in the `airbyte` layout, per nested object)."),
        ("load registry", lambda s: s.registry_table, docs["loads_table"] + " One row per (load ID, stream)."),
        ("dlt's loads", lambda s: s.loads_table if s.dlt_system_tables else "", "One row per load, dlt's shape."),
        ("schema versions", lambda s: s.versions_table, docs["versions_table"]),
        ("quarantine", lambda s: s.quarantine_table, docs["quarantine_table"]),
        ("file ledger", lambda s: ledger_table(s.loads_table), "Producer files already normalized (inputs "
                                                               "other than `packages`)."),
    ]
    for label, name, what in tables:
        out.append(f"| {label} | " + " | ".join(_code(name(s)) for s in names.values()) + f" | {_cell(what)} |\n")
    out += ["\n## System columns\n\n", head]
    for field in ("raw_id", "extracted_at", "load_id", "data", "file", "line", "error", "upstream_changes", "meta",
                  "normalized_at", "row_id", "parent_id_template", "list_idx", "root_id", "valid_from", "valid_to",
                  "is_current", "unique_key", "unique_key_scd"):
        values = [s.row_id("orders") if field == "row_id" else getattr(s, field) for s in names.values()]
        what = docs.get(field, "Row key of a typed row (`airbyte`: named after its table, here `orders`).")
        out.append(f"| `{field}` | " + " | ".join(_code(v) for v in values) + f" | {_cell(what)} |\n")
    out += ["\nChild tables of the `airbyte` convention also carry the record's raw id, extracted at and normalized "
            "at, as Airbyte's do.\n\n## The load registry's columns\n\nThe same under every convention:\n\n",
            "| column | constant |\n|---|---|\n"]
    out += [f"| `{value}` | `{name}` |\n" for name, value in vars(columns).items()
            if name.startswith("LOADS_") and isinstance(value, str)]
    out += ["\n## The schema versions' columns\n\n| column | constant |\n|---|---|\n"]
    out += [f"| `{value}` | `{name}` |\n" for name, value in vars(columns).items()
            if name.startswith("VERSIONS_") and isinstance(value, str)]
    out.append(f"\nUnder `dlt` the versions table also has `{columns.VERSIONS_ENGINE_VERSION}` "
               f"({columns.DLT_ENGINE_VERSION}) and `{columns.VERSIONS_SCHEMA_NAME}`, and `_dlt_loads` has dlt's "
               f"columns `load_id`, `{columns.DLT_LOADS_SCHEMA_NAME}`, `status` ({columns.DLT_STATUS_LOADED}), "
               f"`{columns.DLT_LOADS_INSERTED_AT}`, `schema_version_hash`.\n\n"
               "Airbyte CDC columns of a record, read under every convention: "
               f"`{columns.CDC_UPDATED_AT}`, `{columns.CDC_LOG_POS}`, `{columns.CDC_DELETED_AT}`.\n")
    return "".join(out)


def _code(value: str) -> str:
    return f"`{value}`" if value else "-"


def _attribute_docs(source: str) -> dict[str, str]:
    """The docstrings of `SystemNames`'s fields (the string under each annotation) and properties."""
    docs = {}
    cls = next(n for n in ast.parse(source).body if isinstance(n, ast.ClassDef) and n.name == "SystemNames")
    for before, after in zip(cls.body, cls.body[1:]):
        if isinstance(before, ast.AnnAssign) and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant):
            docs[before.target.id] = str(after.value.value)
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and ast.get_docstring(node):
            docs[node.name] = ast.get_docstring(node).splitlines()[0]
    return docs


# --- Dagster objects -------------------------------------------------------------------------------------------

def dagster_reference() -> str:
    """The Dagster objects of one source: the demo's `shop` (its sample catalog: two `append_dedup` streams with
    child tables and an `append` one), as `pipeline_assets.definitions` builds them."""
    import dagster as dg

    from lakenorm_app.samples import write_catalog
    from normalization_core.api import config_yaml, load_config
    from pipeline_assets.definitions import build_definitions

    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Dagster's notes on its preview features are not the docs' warnings
        root = Path(folder)
        (root / "landing").mkdir()
        write_catalog(root / "catalog.json")
        (root / "lakenorm.yaml").write_text(config_yaml({"warehouse": "warehouse", "sources": [
            {"name": "shop", "landing": "landing", "catalog": "catalog.json"}]}))
        defs = build_definitions(load_config(root / "lakenorm.yaml"))
        graph = defs.resolve_asset_graph()
        jobs = [j for j in defs.resolve_all_job_defs() if not j.name.startswith("__")]
        here = str(root / "landing")
    checks: dict[dg.AssetKey, list[str]] = {}
    for key in sorted(graph.asset_check_keys, key=lambda k: (k.asset_key.to_user_string(), k.name)):
        checks.setdefault(key.asset_key, []).append(f"`{key.name}`")
    keys = sorted(graph.get_all_asset_keys(), key=lambda k: (_LAYERS.index(graph.get(k).tags.get("lakenorm/layer", "")),
                                                            k.to_user_string()))
    out = [GENERATED, "# Dagster objects of a source\n\n",
           "What lakenorm defines in Dagster for one source, here the demo's source `shop` (`make demo`: streams "
           "`orders` and `customers` deduplicated, with `orders`' child tables, and `events` appended), generated "
           "from the definitions the code location builds (`pipeline_assets/factories.py`). Another source gets the "
           "same objects under its own name. How they work together: [Dagster](../concepts/dagster.md).\n\n",
           "## Assets\n\n| asset | kind | layer | depends on | partitions | checks |\n|---|---|---|---|---|---|\n"]
    for key in keys:
        node = graph.get(key)
        kind = "observable source asset" if node.is_observable else "table asset"
        parents = ", ".join(f"`{p.to_user_string()}`" for p in sorted(node.parent_keys, key=str)) or "-"
        partitions = f"`{node.partitions_def.name}`" if node.partitions_def is not None else "-"
        out.append(f"| `{key.to_user_string()}` | {kind} | {node.tags.get('lakenorm/layer', 'system')} | {parents} | "
                   f"{partitions} | {', '.join(checks.get(key, [])) or '-'} |\n")
    out += ["\nAsset tags: " + ", ".join(sorted({f"`{t}`" for k in keys for t in graph.get(k).tags
                                                 if t.startswith("lakenorm/")})) + ".\n\n",
            "## Jobs\n\n| job | what it does |\n|---|---|\n",
            *(f"| `{j.name}` | {_cell(j.description or '')} |\n" for j in jobs),
            "\n## Sensors and schedules\n\n| name | when | by default | what it does |\n|---|---|---|---|\n",
            *(f"| `{s.name}` | every {s.minimum_interval_seconds} s | {s.default_status.value.lower()} | "
              f"{_cell((s.description or '').replace(here, 'the landing'))} |\n" for s in defs.sensors or ()),
            *(f"| `{s.name}` | `{s.cron_schedule}` ({s.execution_timezone}) | {s.default_status.value.lower()} | "
              f"{_cell((s.description or '').replace(here, 'the landing'))} |\n" for s in defs.schedules or ())]
    return "".join(out)


_LAYERS = ["raw", "history", "root", "child", ""]
"""The order of the assets table: raw tables first, then the typed ones, the system tables last."""
