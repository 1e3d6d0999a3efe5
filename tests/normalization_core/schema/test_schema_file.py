"""`schema_file` (SPEC §5.4): `lakenorm schema` output, edited, read back and validated."""
from __future__ import annotations

import pytest
import yaml

from normalization_core.errors import ConfigError
from normalization_core.schema import schema_document
from normalization_core.schema.inference import evolve, infer_schema
from normalization_core.schema.schema_file import read_schema_file, with_stored_additions

OBSERVED = {((), "object"), (("k:id",), "bigint"), (("k:amount",), "bigint")}


def printed(tmp_path, edit=lambda schema: None):
    """A file as `lakenorm schema` prints it, with `edit` applied to the schema."""
    schema = schema_document(infer_schema("s", OBSERVED, "dlt"))
    edit(schema)
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump_all([{"source": "a", "stream": "s", "version": 1, "version_hash": "h",
                                         "schema": schema}], sort_keys=False))
    return path


def test_an_edited_type_and_an_added_column_are_the_streams_schema(tmp_path):
    def edit(schema):
        amount = schema["tables"][0]["columns"][0]
        amount.update(data_type="double", logical_type="double")
        schema["tables"][0]["columns"].append({"name": "note", "path": ["note"], "data_type": "string",
                                               "logical_type": "string"})
    schema = read_schema_file(printed(tmp_path, edit), "s", "dlt")["s"]
    columns = {c["name"]: (c["data_type"], c["accepts"]) for c in schema["tables"][0]["columns"]}
    assert columns["amount"] == ("double", ["bigint", "double"])  # takes what a double column takes
    assert columns["note"][0] == "string" and "bigint" in columns["note"][1]
    # the loads evolve from it: nothing of the edit is undone, new keys are added
    evolved = evolve(schema, {**dict.fromkeys(OBSERVED), (("k:extra",), "bool"): None}.keys())
    assert [(c["name"], c["data_type"]) for c in evolved["tables"][0]["columns"]] == [
        ("amount", "double"), ("id", "bigint"), ("note", "string"), ("extra", "boolean")]


def test_stored_additions_follow_the_files_own_columns(tmp_path):
    given = read_schema_file(printed(tmp_path), "s", "dlt")["s"]
    stored = evolve(infer_schema("s", OBSERVED, "dlt"), {(("k:late",), "text")})
    merged = with_stored_additions(given, stored)
    assert [c["name"] for c in merged["tables"][0]["columns"]] == ["amount", "id", "late"]
    assert with_stored_additions(given, None) is given


@pytest.mark.parametrize("edit, message", [
    (lambda s: s["tables"][0]["columns"][0].update(data_type="double"), "set data_type to 'bigint'"),
    (lambda s: s["tables"][0]["columns"][0].update(logical_type="union"), "logical_type 'union'"),
    (lambda s: s["tables"][0]["columns"][0].update(colour="red"), "unknown key 'colour' in a column"),
    (lambda s: s["tables"][0].update(rows=1), "unknown key 'rows' in a table"),
    (lambda s: s.update(convention="airbyte"), "not the source's 'dlt'"),
    (lambda s: s["tables"][0]["columns"].append(dict(s["tables"][0]["columns"][0])), "two columns of this name"),
])
def test_a_wrong_edit_is_one_clear_error(tmp_path, edit, message):
    with pytest.raises(ConfigError, match=message):
        read_schema_file(printed(tmp_path, edit), "s", "dlt")


def test_the_stream_must_be_in_the_file(tmp_path):
    with pytest.raises(ConfigError, match="no document for stream 'other'"):
        read_schema_file(printed(tmp_path), "other", "dlt")
