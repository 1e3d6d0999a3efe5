"""Write dispositions as plug-ins (SPEC §6): one `Disposition` per `destination_sync_mode`.

`disposition(name)` parses a configured name into its plug-in; a stream's plan carries it
(`StreamPlan.disposition`), and writers, rebuild, maintenance and the Dagster graph and checks ask it.
"""
from __future__ import annotations

from normalization_core.dispositions.append import Append
from normalization_core.dispositions.append_dedup import AppendDedup
from normalization_core.dispositions.base import Disposition, TableCheck, TypedCounts
from normalization_core.dispositions.overwrite import Overwrite
from normalization_core.errors import ConfigError

DISPOSITIONS: dict[str, Disposition] = {d.name: d for d in (Append(), Overwrite(), AppendDedup())}
"""Every disposition by the `destination_sync_mode` that names it."""


def disposition(name: str) -> Disposition:
    """The plug-in a `destination_sync_mode` names."""
    try:
        return DISPOSITIONS[name]
    except KeyError:
        raise ConfigError("destination_sync_mode", f"unknown disposition {name!r}; supported: "
                                                   f"{', '.join(DISPOSITIONS)}") from None


__all__ = ["DISPOSITIONS", "Append", "AppendDedup", "Disposition", "Overwrite", "TableCheck", "TypedCounts",
           "disposition"]
