"""Partitions: one dynamic partition per load ID of a source."""
from __future__ import annotations

import dagster as dg

from normalization_core.api import SourceConfig


def load_ids_partitions(source: SourceConfig) -> dg.DynamicPartitionsDefinition:
    """`<source>_load_ids`: every stream asset of the source is partitioned by it."""
    return dg.DynamicPartitionsDefinition(name=f"{source.name}_load_ids")
