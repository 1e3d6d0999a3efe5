"""Naming conventions as plug-ins behind one interface (SPEC §4).

`normalization_core.naming.conventions.get_convention("native" | ... | "package.module:ClassName")` returns one;
each built-in class here is the naming of one `conventions.Convention`.
"""
from __future__ import annotations

from normalization_core.naming.airbyte import AirbyteNaming
from normalization_core.naming.base import NamingConvention
from normalization_core.naming.collisions import NameAssignment, NameCollision, assign_names
from normalization_core.naming.direct import DirectNaming
from normalization_core.naming.snake_case import DltNaming, SnakeCaseNaming

__all__ = [
    "AirbyteNaming",
    "DirectNaming",
    "DltNaming",
    "NameAssignment",
    "NameCollision",
    "NamingConvention",
    "SnakeCaseNaming",
    "assign_names",
]
