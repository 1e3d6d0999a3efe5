"""Input kinds (SPEC §2.4): plug-ins saying what a source's landing holds, chosen by its `input` key."""
from __future__ import annotations

from normalization_core.configuration.config import INPUT_KINDS, SourceConfig
from normalization_core.inputs.airbyte_destination import AirbyteDestination
from normalization_core.inputs.base import InputKind
from normalization_core.inputs.dlt_extract import DltExtract
from normalization_core.inputs.manifest_packages import ManifestPackages
from normalization_core.inputs.singer import SingerFiles

KINDS: dict[str, type[InputKind]] = {"packages": ManifestPackages, "airbyte_destination": AirbyteDestination,
                                     "singer": SingerFiles, "dlt_extract": DltExtract}
assert set(KINDS) == set(INPUT_KINDS)


def get_input(kind: str) -> InputKind:
    """The plug-in of an input kind (`packages`, `airbyte_destination`, `singer`, `dlt_extract`)."""
    return KINDS[kind]()


def source_input(source: SourceConfig) -> InputKind:
    return get_input(source.input)
