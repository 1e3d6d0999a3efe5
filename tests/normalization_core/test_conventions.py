"""One record per convention: what the configuration accepts, what each writes, which layout it uses."""
from __future__ import annotations

from pathlib import Path

import pytest

from normalization_core.columns import AIRBYTE, DLT, NATIVE
from normalization_core.configuration.config import parse_config
from normalization_core.naming.conventions import CONVENTIONS, convention_named, get_convention, system_names
from normalization_core.schema.from_json_schema import LAYOUTS


def test_every_convention_has_a_layout_and_its_naming_carries_its_name() -> None:
    for name, convention in CONVENTIONS.items():
        assert convention.layout in LAYOUTS
        assert get_convention(name).name == name


@pytest.mark.parametrize(("name", "names", "layout", "length"), [
    ("native", NATIVE, "dlt", 255), ("dlt", DLT, "dlt", 255), ("airbyte", AIRBYTE, "airbyte", 63),
    ("direct", DLT, "dlt", 255),
])
def test_a_source_gets_its_conventions_system_names_layout_and_default_length_resolved_once(
        tmp_path: Path, name: str, names: object, layout: str, length: int) -> None:
    config = parse_config({"warehouse": "wh", "sources": [{"name": "s", "landing": ".", "convention": name}]},
                          base_dir=tmp_path)
    source = config.sources[0]
    assert system_names(source.convention) is names
    assert convention_named(source.convention).layout == layout
    assert source.max_identifier_length == length
    assert source.naming is source.naming
    assert source.naming.names is names and source.naming.convention is CONVENTIONS[name]
    assert source.naming.identifiers.name == name and source.naming.identifiers.max_identifier_length == length


def test_an_unknown_name_says_what_is_supported() -> None:
    with pytest.raises(ValueError, match=r"convention 'camel': inference supports \('native', 'dlt', 'airbyte'"):
        convention_named("camel", "inference")
