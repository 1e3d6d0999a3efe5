"""airbyte convention against Airbyte base-normalization's golden vectors (airbyte.md §1-§3)."""
from __future__ import annotations

from typing import Any

import pytest

from normalization_core.naming import AirbyteNaming

from normalization_core.naming.conventions import get_convention
from normalization_core.naming.airbyte import hash_json_path, strip_accents, transform_standard_naming, truncate_middle


@pytest.fixture
def airbyte() -> AirbyteNaming:
    naming = get_convention("airbyte")
    assert isinstance(naming, AirbyteNaming)
    return naming


@pytest.mark.cases("airbyte_standard_naming.json", function="transform_standard_naming")
def test_transform_standard_naming(case: dict[str, Any]) -> None:
    assert transform_standard_naming(case["input"]) == case["expected"]


@pytest.mark.cases("airbyte_standard_naming.json", function="strip_accents")
def test_strip_accents(case: dict[str, Any]) -> None:
    assert strip_accents(case["input"]) == case["expected"]


@pytest.mark.cases("airbyte_identifier.json")
def test_normalize_identifier(airbyte: AirbyteNaming, case: dict[str, Any]) -> None:
    assert airbyte.normalize_identifier(case["input"]) == case["expected"]
    assert airbyte.normalize_table_name(case["input"]) == case["expected"]
    assert airbyte.normalize_path(case["input"]) == case["expected"]


@pytest.mark.cases("airbyte_truncate.json")
def test_shorten_truncates_in_the_middle(airbyte: AirbyteNaming, case: dict[str, Any]) -> None:
    assert airbyte.shorten(case["input"]) == case["expected"]
    assert len(case["expected"]) <= 43


@pytest.mark.cases("airbyte_nested_tables.json", kind="simple")
def test_child_table_name(airbyte: AirbyteNaming, case: dict[str, Any]) -> None:
    stream, *keys = case["json_path"]
    assert airbyte.child_table_name(stream, tuple(keys)) == case["expected"]


@pytest.mark.cases("airbyte_nested_tables.json", kind="hashed")
def test_hashed_child_table_name(airbyte: AirbyteNaming, case: dict[str, Any]) -> None:
    assert airbyte.hashed_child_table_name(case["schema"], case["json_path"]) == case["expected"]


def test_defaults_to_the_postgres_limit(airbyte: AirbyteNaming) -> None:
    assert airbyte.max_identifier_length == 63
    assert airbyte.usable_length == 43
    assert get_convention("airbyte", max_identifier_length=127).usable_length == 107


def test_truncate_middle_rounds_half_to_even() -> None:
    # limit 43: round(21.5) == 22 -> 20 characters, "__", the last 21
    assert truncate_middle("a" * 20 + "x" * 10 + "b" * 21, 43) == "a" * 20 + "__" + "b" * 21
    # limit 41: round(20.5) == 20 -> 20 characters, "__", the last 19
    assert truncate_middle("a" * 20 + "x" * 10 + "b" * 19, 41) == "a" * 20 + "__" + "b" * 19


def test_hash_is_sha1_of_the_lowercased_joined_path() -> None:
    assert hash_json_path(["schema", "parent", "child"]) == "30c"
    assert hash_json_path(["SCHEMA", "Parent", "Child"]) == "30c"


def test_hashed_name_uses_the_normalized_schema(airbyte: AirbyteNaming) -> None:
    assert airbyte.hashed_child_table_name("Schema", ["parent", "child"]) == "parent_30c_child"


def test_names_may_start_with_a_digit(airbyte: AirbyteNaming) -> None:
    assert airbyte.normalize_identifier("100x2001") == "100x2001"
    assert airbyte.child_table_name("adcreatives", ("image_crops", "100x72")) == "adcreatives_image_crops_100x72"


def test_make_path_joins_with_one_underscore(airbyte: AirbyteNaming) -> None:
    assert airbyte.make_path("parent", "child") == "parent_child"
