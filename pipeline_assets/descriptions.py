"""What the asset catalog says of each table: descriptions a user can act on, and tags to filter by.

Descriptions name the stream, its primary key, cursor, write disposition, naming convention, the
table's parent and where packages land. Tags (`lakenorm/...`) carry the same facts for filtering.
The configuration has no owners, so assets declare none.
"""
from __future__ import annotations

from normalization_core.api import SourceConfig, StreamPlan, SystemNames


def _paths(paths) -> str:
    return ", ".join(".".join(p) for p in paths) or "none"


def stream_facts(source: SourceConfig, plan: StreamPlan | None) -> str:
    """The stream-wide lines shared by all its tables' descriptions."""
    lines = [f"- Source `{source.name}`, packages landing in `{source.landing}`",
             f"- Naming convention: `{source.convention}`"]
    if plan is not None:
        disposition = plan.disposition
        lines += [f"- Primary key: `{_paths(plan.settings.primary_key)}`",
                  f"- Cursor: `{_paths([plan.settings.cursor_field] if plan.settings.cursor_field else [])}`",
                  f"- Disposition: `{disposition.name}` ({disposition.summary})"]
    return "\n".join(lines)


def raw_description(source: SourceConfig, stream: str, plan: StreamPlan | None) -> str:
    return (f"Raw lines of stream `{stream}`, one row per landed line, untouched; rejected lines are kept "
            f"with their error. The rebuild source of all the stream's tables.\n\n{stream_facts(source, plan)}")


def history_description(source: SourceConfig, plan: StreamPlan) -> str:
    return (f"SCD type 2 history of stream `{plan.settings.name}`: every distinct version of each key, with "
            f"its validity interval. Parent of the current table and of the root's child tables.\n\n"
            f"{stream_facts(source, plan)}")


def typed_description(source: SourceConfig, plan: StreamPlan, table: str, parent: str) -> str:
    """`parent`: the asset the table is built from in the graph (raw, history or parent table)."""
    stream = plan.settings.name
    if table == plan.tables[0]:
        kind = plan.disposition.root_role.format(stream=stream)
    else:
        kind = f"Child table of stream `{stream}`: one row per element of a nested list, keyed to its parent row"
    return f"{kind}. Built from `{parent}`.\n\n{stream_facts(source, plan)}"


def stream_tags(source: SourceConfig, plan: StreamPlan | None, layer: str) -> dict[str, str]:
    """`layer`: raw, history, root or child."""
    tags = {"lakenorm/convention": source.convention, "lakenorm/layer": layer}
    if plan is not None:
        tags["lakenorm/disposition"] = plan.disposition.name
    return tags


def system_descriptions(names: SystemNames) -> dict[str, str]:
    """The observed system tables of a convention, with what each holds: `_norm_loads` (registry) and
    `_norm_versions` (schema versions); under dlt, dlt's `_dlt_loads` and the registry `_dlt_stream_loads`."""
    registry = "Load registry: one row per normalized load and stream (SPEC §3)."
    tables = {names.loads_table: registry,
              names.versions_table: "Schema versions: one row per stream schema version (SPEC §3)."}
    if names.stream_loads_table:
        tables[names.loads_table] = "dlt's load table: one row per complete load (status 0)."
        tables[names.stream_loads_table] = registry
    return tables
