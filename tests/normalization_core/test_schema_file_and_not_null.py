"""`schema_file` and the `nullable` hint (SPEC §5.4) end to end: `lakenorm schema` printed, edited and given
back as a stream's schema; a record without a value for a `nullable: false` column fails its load, as in dlt."""
from __future__ import annotations

import pytest
import yaml

from lakenorm_app import commands
from normalization_core.configuration.config import load_config
from normalization_core.errors import NotNullViolation
from normalization_core.io.delta import is_delta_table, read_table
from normalization_core.passes.normalize import normalize_load

from tests.normalization_core.dlt_peer import write_package

FIRST = [{"id": 1, "amount": 10, "name": "x"}]
SECOND = [{"id": 2, "amount": 20, "name": "y", "note": 5, "extra": True}]


def write_config(work, sources: list[dict]):
    doc = {"warehouse": "wh", "sources": [{"landing": s["name"], "convention": "dlt", **s} for s in sources],
           "spark": {"master": "local[2]", "spark.sql.shuffle.partitions": "2"}}
    (work / "lakenorm.yaml").write_text(yaml.safe_dump(doc))
    return str(work / "lakenorm.yaml")


@pytest.mark.slow
def test_a_printed_schema_edited_and_given_back_types_the_stream(spark, tmp_path, capsys):
    for source in ("a", "b"):
        (tmp_path / source).mkdir()
        write_package(tmp_path / source, "1700000000.1", "2023-11-14T22:13:20Z", {"s": FIRST}, source)
    first = write_config(tmp_path, [{"name": "a"}])
    assert commands.main(["--config", first, "normalize"]) == 0
    capsys.readouterr()
    assert commands.main(["--config", first, "schema", "--source", "a", "--stream", "s"]) == 0
    document = yaml.safe_load(capsys.readouterr().out)
    columns = document["schema"]["tables"][0]["columns"]
    next(c for c in columns if c["name"] == "amount").update(data_type="double", logical_type="double")
    columns.append({"name": "note", "path": ["note"], "data_type": "string", "logical_type": "string"})
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(document, sort_keys=False))

    write_package(tmp_path / "b", "1700000001.1", "2023-11-14T22:13:21Z", {"s": SECOND}, "b")
    config = write_config(tmp_path, [{"name": "a"}, {"name": "b", "streams": {"s": {"schema_file": "s.yaml"}}}])
    assert commands.main(["--config", config, "normalize", "--source", "b"]) == 0
    table = read_table(spark, load_config(config).table_path("b", "s"))

    types = {name: kind for name, kind in table.dtypes if not name.startswith("_dlt")}
    assert types == {"id": "bigint", "amount": "double", "name": "string", "note": "string", "extra": "boolean"}
    assert sorted((r.id, r.amount, r.note) for r in table.collect()) == [(1, 10.0, None), (2, 20.0, "5")]


@pytest.mark.slow
def test_a_missing_value_of_a_non_nullable_column_fails_the_load_as_in_dlt(spark, tmp_path):
    dlt = pytest.importorskip("dlt")
    records = [{"id": 1, "a": "x"}, {"id": 2}]
    pipeline = dlt.pipeline(pipeline_name="nn", dataset_name="ds", pipelines_dir=str(tmp_path / "dlt"),
                            destination=dlt.destinations.filesystem(bucket_url=(tmp_path / "t").as_uri()))
    with pytest.raises(Exception, match="non-nullable"):
        pipeline.run(dlt.resource(records, name="s", columns={"a": {"nullable": False}}), loader_file_format="parquet")

    (tmp_path / "chain").mkdir()
    write_package(tmp_path / "chain", "1700000000.1", "2023-11-14T22:13:20Z", {"s": records})
    hints = {"s": {"columns": {"a": {"nullable": False}}}}
    config = load_config(write_config(tmp_path, [{"name": "chain", "streams": hints}]))
    with pytest.raises(NotNullViolation, match="column 'a' is hinted nullable: false but 1 record"):
        normalize_load(spark, config, "chain", "1700000000.1")
    assert not is_delta_table(spark, config.table_path("chain", "_dlt_raw_s"))  # nothing committed
