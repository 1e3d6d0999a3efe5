"""A file input's settled files as its kind reads them (`base.FileInput.members`): the shared vocabulary of
discovery (`base`) and of what still settles (`settling`), below both."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from normalization_core.inputs.listing import FileEntry
from normalization_core.io.load_packages import RejectedPackage


@dataclass(frozen=True)
class Member:
    """A settled, not yet normalized file and what its kind read from its name or head."""

    file: FileEntry
    base_load_id: str
    stream: str | None
    format: str
    created_at: datetime


@dataclass
class Grouping:
    members: list[Member] = field(default_factory=list)
    rejected: list[RejectedPackage] = field(default_factory=list)
