"""Write dispositions are plug-ins: a stream's plan carries one, parsed once from its configured name,
and no module of the library or the Dagster code compares a disposition's name; each plug-in says its tables'
graph parents and checks."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from normalization_core.checks.data_checks import NO_ORPHANS, NO_OVERLAP, ONE_CURRENT, ROWS_TYPED, UNIQUE_KEY
from normalization_core.configuration.config import SYNC_MODES
from normalization_core.dispositions import DISPOSITIONS, AppendDedup, Overwrite, TableCheck, disposition
from normalization_core.errors import ConfigError
from normalization_core.plans.stream_plans import stream_plans
from tests.normalization_core.test_plan import sample_tables

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("normalization_core", "pipeline_assets")
NAMES = set(SYNC_MODES)


def _names_in(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in NAMES
    return isinstance(node, (ast.Tuple, ast.List, ast.Set)) and any(_names_in(e) for e in node.elts)


def disposition_switches(source: str) -> list[str]:
    """`line: what` for each comparison with a disposition's name (`==`, `in`, ...) and each mapping keyed by one."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare) and any(_names_in(n) for n in (node.left, *node.comparators)):
            found.append(f"{node.lineno}: compares a disposition name")
        elif isinstance(node, ast.Dict) and any(k is not None and _names_in(k) for k in node.keys):
            found.append(f"{node.lineno}: a mapping keyed by disposition names")
        elif isinstance(node, ast.Attribute) and node.attr == "mode" and isinstance(node.ctx, ast.Load) \
                and isinstance(node.value, ast.Name) and node.value.id == "plan":
            found.append(f"{node.lineno}: plan.mode")
    return found


def test_no_module_compares_a_disposition_name():
    offenders = {}
    for path in sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py")):
        found = disposition_switches(path.read_text(encoding="utf-8"))
        if found:
            offenders[path.relative_to(ROOT).as_posix()] = found
    assert offenders == {}, "ask the plan's `disposition` (a `Disposition`) instead of switching on its name"


@pytest.mark.parametrize("snippet", [
    'if plan.settings.destination_sync_mode == "append_dedup": pass',
    'x = mode in ("append", "overwrite")',
    'x = "overwrite" != mode',
    'x = {"append": 1}[mode]',
    'x = plan.mode',
])
def test_the_scan_finds_each_switch(snippet):
    assert disposition_switches(snippet)


def test_the_scan_passes_what_names_a_disposition():
    assert disposition_switches('settings = dict(destination_sync_mode="append_dedup" if key else "append")\n'
                                'df.write.mode("overwrite")\nx = plan.disposition.name') == []


def test_each_configured_name_has_its_plug_in_and_an_unknown_one_is_a_configuration_error():
    assert tuple(DISPOSITIONS) == SYNC_MODES
    assert all(disposition(name).name == name for name in SYNC_MODES)
    with pytest.raises(ConfigError, match="unknown disposition 'merge'"):
        disposition("merge")


def test_a_plan_carries_the_plug_in_its_settings_name(tmp_path):
    tables = sample_tables(tmp_path, "native")
    plans = stream_plans(tables.source)
    assert isinstance(plans["orders"].disposition, AppendDedup)
    assert plans["events"].disposition is DISPOSITIONS["append"]
    assert not isinstance(plans["events"].disposition, Overwrite)


def test_a_dedup_roots_children_hang_off_the_history_and_deeper_ones_off_their_parent(tmp_path):
    tables = sample_tables(tmp_path, "native")
    plan, names = stream_plans(tables.source)["orders"], tables.names
    parents = {t: plan.disposition.graph_parent(plan, names, t) for t in plan.disposition.output_tables(plan, names)}
    assert parents == {"orders_scd": None, "orders": "orders_scd", "orders__line_items": "orders_scd",
                       "orders__tags": "orders_scd", "orders__line_items__discounts": "orders__line_items"}
    assert plan.disposition.checks(plan, names) == [
        TableCheck(UNIQUE_KEY, "orders"),
        TableCheck(ONE_CURRENT, "orders_scd", "orders", per_load=False),
        TableCheck(NO_OVERLAP, "orders_scd", "orders", per_load=False),
        TableCheck(NO_ORPHANS, "orders__line_items", "orders_scd", per_load=False),
        TableCheck(NO_ORPHANS, "orders__tags", "orders_scd", per_load=False),
        TableCheck(NO_ORPHANS, "orders__line_items__discounts", "orders__line_items")]


def test_an_append_streams_tables_hang_off_raw_and_their_parents(tmp_path):
    tables = sample_tables(tmp_path, "native")
    plan, names = stream_plans(tables.source)["events"], tables.names
    assert plan.disposition.graph_parent(plan, names, "events") is None
    assert plan.disposition.checks(plan, names) == [TableCheck(ROWS_TYPED, "events")]
    assert plan.disposition.key_ordered_tables(plan, names) == {}
