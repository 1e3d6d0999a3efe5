"""Typed configuration (SPEC §2.3): every mistake is one clear line."""
from __future__ import annotations

import pytest
import yaml

from normalization_core.configuration.config import ColumnHint, SchemaContract, SchemaSettings, load_config, parse_config
from normalization_core.configuration.config import stream_contract, stream_upstream
from normalization_core.errors import ConfigError


def config_doc(tmp_path, **source):
    (tmp_path / "landing").mkdir(exist_ok=True)
    return {"warehouse": "wh", "sources": [{"name": "shop", "landing": "landing", **source}]}


def test_defaults_and_relative_paths(tmp_path):
    cfg = parse_config(config_doc(tmp_path), base_dir=tmp_path)
    src = cfg.source("shop")
    assert cfg.warehouse == str(tmp_path / "wh")
    assert src.landing == tmp_path / "landing"
    assert (src.convention, src.max_identifier_length, src.max_table_nesting) == ("native", 255, 1000)
    assert (src.input, src.settle_seconds, src.deletion_vectors) == ("packages", 60, False)
    assert (src.max_loads_per_run, src.automation, src.upstream) == (50, "sensor", ())
    assert cfg.spark == {"master": "local[2]"}
    assert cfg.table_path("shop", "_norm_raw_orders") == f"{tmp_path}/wh/shop/_norm_raw_orders"


def test_paths_from_python_callers_are_taken_as_the_text_a_file_holds(tmp_path):
    doc = config_doc(tmp_path)
    doc["warehouse"] = tmp_path / "wh"
    doc["sources"][0]["landing"] = tmp_path / "landing"
    cfg = parse_config(doc, tmp_path)
    assert cfg.warehouse == str(tmp_path / "wh") and cfg.source("shop").landing == tmp_path / "landing"


def test_deletion_vectors_are_a_per_source_switch(tmp_path):
    assert parse_config(config_doc(tmp_path, deletion_vectors=True), tmp_path).source("shop").deletion_vectors is True


def test_schema_settings_keep_dlts_default_detection_and_the_order_of_preferred_types(tmp_path):
    assert parse_config(config_doc(tmp_path), tmp_path).source("shop").settings == SchemaSettings(("iso_timestamp",), ())
    doc = config_doc(tmp_path, settings={"detections": ["iso_date"], "preferred_types": {"re:_at$": "timestamp", "x": "text"}})
    assert parse_config(doc, tmp_path).source("shop").settings == SchemaSettings(
        ("iso_date",), (("re:_at$", "timestamp"), ("x", "text")))


def test_schema_contract_of_a_source_and_its_streams(tmp_path):
    doc = config_doc(tmp_path, schema_contract="freeze", streams={"e": {"schema_contract": {"columns": "evolve"}}})
    src = parse_config(doc, tmp_path).source("shop")
    assert src.schema_contract == SchemaContract("freeze", "freeze", "freeze")
    assert stream_contract(src, "e") == SchemaContract(tables="freeze", columns="evolve", data_type="freeze")
    assert stream_contract(src, "other") == src.schema_contract
    assert parse_config(config_doc(tmp_path), tmp_path).source("shop").schema_contract == SchemaContract()


def test_discard_modes_and_the_nullable_hint(tmp_path):
    doc = config_doc(tmp_path, schema_contract={"columns": "discard_row", "data_type": "discard_value"},
                     streams={"e": {"columns": {"id": {"nullable": False}}}})
    src = parse_config(doc, tmp_path).source("shop")
    assert src.schema_contract == SchemaContract(columns="discard_row", data_type="discard_value")
    assert src.streams["e"].columns == {"id": ColumnHint(nullable=False)}


def test_airbyte_convention_defaults_to_63_characters(tmp_path):
    assert parse_config(config_doc(tmp_path, convention="airbyte"), tmp_path).source("shop").max_identifier_length == 63


def test_file_with_overrides_and_spark_conf(tmp_path, monkeypatch):
    doc = config_doc(tmp_path, streams={"events": {"destination_sync_mode": "append"},
                                        "orders": {"primary_key": [["id"]], "cursor_field": "updated_at"}})
    doc["spark"] = {"master": "local[1]", "spark.sql.shuffle.partitions": 8}
    (tmp_path / "lakenorm.yaml").write_text(yaml.safe_dump(doc))
    monkeypatch.setenv("LAKENORM_CONFIG", str(tmp_path / "lakenorm.yaml"))
    cfg = load_config()
    assert cfg.spark == {"master": "local[1]", "spark.sql.shuffle.partitions": "8"}
    orders = cfg.source("shop").streams["orders"]
    assert orders.primary_key == (("id",),) and orders.cursor_field == ("updated_at",)
    assert cfg.source("shop").streams["events"].destination_sync_mode == "append"


def test_column_hints_and_a_single_primary_key_column_as_dlt_writes_them(tmp_path):
    doc = config_doc(tmp_path, streams={"orders": {"primary_key": "id", "columns": {
        "Total": {"data_type": "double"}, "sku": {"primary_key": True}}}})
    orders = parse_config(doc, tmp_path).source("shop").streams["orders"]
    assert orders.primary_key == (("id",),)
    assert orders.columns == {"Total": ColumnHint(data_type="double"), "sku": ColumnHint(primary_key=True)}


def test_upstream_asset_keys_of_a_source_and_of_its_streams(tmp_path):
    """A stream's own `upstream` replaces its source's; a key is a list of parts or the UI's `a/b`."""
    doc = config_doc(tmp_path, upstream=[["dlt", "github_issues"], "dlt/github_pulls"],
                     streams={"pulls": {"upstream": ["dlt/github_pulls"]}, "local": {"upstream": []}, "issues": {}})
    src = parse_config(doc, tmp_path).source("shop")
    both = (("dlt", "github_issues"), ("dlt", "github_pulls"))
    assert [stream_upstream(src, s) for s in ("issues", "pulls", "local", "unlisted")] == [
        both, (("dlt", "github_pulls"),), (), both]
    assert parse_config(config_doc(tmp_path), tmp_path).source("shop").upstream == ()


@pytest.mark.parametrize("change, message", [
    (lambda d: d.update(warehous="x"), "unknown key 'warehous' in the top level: did you mean 'warehouse'?"),
    (lambda d: d["sources"][0].update(landig="x"), "unknown key 'landig' in a source: did you mean 'landing'?"),
    (lambda d: d["sources"][0].update(conventoin="dlt"),
     "unknown key 'conventoin' in a source: did you mean 'convention'?"),
    (lambda d: d["sources"][0].update(zzz="x"), "unknown key 'zzz' in a source (allowed: "),
    (lambda d: d["sources"][0].update(convention="camel"), "unknown convention 'camel'"),
    (lambda d: d["sources"][0].update(landing="missing"), "landing folder"),
    (lambda d: d["sources"][0].update(input="fivetran"), "unknown input 'fivetran' (choose one of packages, "),
    (lambda d: d["sources"][0].update(settle_seconds=-1), "'settle_seconds' must be a non-negative integer"),
    (lambda d: d["sources"][0].update(max_loads_per_run=0), "'max_loads_per_run' must be a positive integer"),
    (lambda d: d["sources"][0].update(automation="eager"), "unknown automation 'eager' (choose one of sensor, "),
    (lambda d: d["sources"][0].update(name="../x"), "source name must be a letter or '_' followed by letters, digits or '_'"),
    (lambda d: d["sources"][0].update(settings={"detections": ["epoch"]}), "'detections' must be a list of timestamp, iso_"),
    (lambda d: d["sources"][0].update(settings={"preferred_types": {"re:(": "text"}}), "not a valid regular expression"),
    (lambda d: d["sources"][0].update(settings={"preferred_types": {"x": "int"}}), "unknown data type 'int'"),
    (lambda d: d["sources"][0].update(settings={"detection": []}), "unknown key 'detection' in 'settings'"),
    (lambda d: d["sources"][0].update(schema_contract="lock"), "schema_contract: unknown mode 'lock' (choose one of evolve, "),
    (lambda d: d["sources"][0].update(schema_contract={"rows": "freeze"}), "unknown key 'rows' in 'schema_contract'"),
    (lambda d: d["sources"][0].update(streams={"e": {"schema_contract": {"columns": "discard"}}}),
     "streams.e.schema_contract.columns: unknown mode 'discard' (choose one of evolve, freeze, discard_row, "),
    (lambda d: d["sources"][0].update(schema_file="missing.yaml"), "schema_file"),
    (lambda d: d["sources"][0].update(streams={"e": {"schema_file": "missing.yaml"}}), "streams.e: schema_file"),
    (lambda d: d["sources"][0].update(streams={"e": {"columns": {"x": {"nullable": "no"}}}}),
     "'nullable' must be true or false"),
    (lambda d: d["sources"][0].update(deletion_vectors="no"), "'deletion_vectors' must be true or false, got 'no'"),
    (lambda d: d["sources"][0].update(streams={"e": {"destination_sync_mode": "merge"}}), "unknown destination_sync_mode"),
    (lambda d: d["sources"][0].update(streams={"e": {"mode": "append"}}), "unknown key 'mode' in a stream override"),
    (lambda d: d["sources"][0].update(streams={"e": {"columns": {"x": {"data_type": "int"}}}}),
     "streams.e.columns.x.data_type: unknown data type 'int' (choose one of text, bigint,"),
    (lambda d: d["sources"][0].update(streams={"e": {"columns": {"x": {"nullabel": False}}}}),
     "unknown key 'nullabel' in a column hint"),
    (lambda d: d["sources"][0].update(max_table_nesting=0), "'max_table_nesting' must be a positive integer"),
    (lambda d: d["sources"][0].update(upstream="dlt"), "'upstream' must be a list of Dagster asset keys, each a"),
    (lambda d: d["sources"][0].update(upstream=[[]]), "'upstream[0]' must be a non-empty list, got []"),
    (lambda d: d["sources"][0].update(upstream=["dlt//issues"]), "upstream asset key 'dlt//issues' has an empty part"),
    (lambda d: d["sources"][0].update(streams={"e": {"upstream": [1]}}),
     "streams.e: 'upstream[0]' must be a Dagster asset key: a list of its parts, or its parts joined by '/'"),
    (lambda d: d["sources"][0].update(upstreams=[]), "unknown key 'upstreams' in a source: did you mean 'upstream'?"),
    (lambda d: d["sources"][0].update(max_identifier_length=5), "max_identifier_length must be at least 8"),
    (lambda d: d.update(spark={"driver_memory": "1g"}), "unknown key 'driver_memory' in 'spark' (allowed: "),
    (lambda d: d.update(spark={"remote": "local"}), "spark: 'remote' must be a Spark Connect address sc://host"),
    (lambda d: d.update(spark={"remote": "127.0.0.1:15002"}), "spark: 'remote' must be a Spark Connect address sc://host[:port][/;param=value], got '127.0.0.1:15002'"),
    (lambda d: d.pop("warehouse"), "missing key 'warehouse'"),
    (lambda d: d.update(sources=[]), "'sources' must be a non-empty list"),
    (lambda d: d.update(object_store={"endpont": "http://h:1"}), "unknown key 'endpont' in 'object_store'"),
    (lambda d: d.update(object_store={"endpoint": "h:9000"}), "'endpoint' must be http(s)://host[:port]"),
    (lambda d: d.update(object_store={"path_style_access": "yes"}), "'path_style_access' must be true or false"),
    (lambda d: d["sources"][0].update(landing="gs://b/x"), "landing 'gs://b/x': a local folder or an s3a://"),
    (lambda d: d.update(warehouse="s3a://"), "warehouse 's3a://' names no bucket"),
])
def test_mistakes_are_one_clear_line(tmp_path, change, message):
    doc = config_doc(tmp_path)
    change(doc)
    with pytest.raises(ConfigError) as err:
        parse_config(doc, base_dir=tmp_path)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("key", ["remote", "spark.remote"])
def test_a_remote_names_a_spark_connect_engine_beside_the_default_master(tmp_path, key):
    doc = config_doc(tmp_path)
    doc["spark"] = {key: "sc://127.0.0.1:15002", "spark.driver.memory": "2g"}
    spark = parse_config(doc, base_dir=tmp_path).spark
    assert spark == {"master": "local[2]", "remote": "sc://127.0.0.1:15002", "spark.driver.memory": "2g"}
    doc["spark"] = {"remote": "sc://engine/;token=abc"}
    assert parse_config(doc, base_dir=tmp_path).spark["remote"] == "sc://engine/;token=abc"


def test_s3a_locations_and_the_object_store_section(tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "key-from-env")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret-from-env")
    doc = {"warehouse": "s3a://lake/wh/", "object_store": {"endpoint": "http://127.0.0.1:9000", "region": "eu-west-1"},
           "sources": [{"name": "shop", "landing": "s3a://lake/landing/shop"}],
           "spark": {"spark.hadoop.fs.s3a.path.style.access": False}}
    cfg = parse_config(doc, base_dir=tmp_path)
    assert cfg.warehouse == "s3a://lake/wh" and str(cfg.source("shop").landing) == "s3a://lake/landing/shop"
    assert cfg.table_path("shop", "orders") == "s3a://lake/wh/shop/orders"
    assert cfg.spark == {  # non-secret S3A settings; the user's own win; credentials stay in the environment
        "master": "local[2]", "spark.hadoop.fs.s3a.path.style.access": "false",
        "spark.hadoop.fs.s3a.endpoint": "http://127.0.0.1:9000",
        "spark.hadoop.fs.s3a.connection.ssl.enabled": "false", "spark.hadoop.fs.s3a.endpoint.region": "eu-west-1"}
    options = cfg.storage_options(cfg.table_path("shop", "_norm_versions"))
    assert options == {"AWS_ACCESS_KEY_ID": "key-from-env", "AWS_SECRET_ACCESS_KEY": "secret-from-env",
                       "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "false", "AWS_ENDPOINT_URL": "http://127.0.0.1:9000",
                       "AWS_ALLOW_HTTP": "true", "AWS_REGION": "eu-west-1"}
    aws = parse_config({**doc, "object_store": None}, base_dir=tmp_path)  # no section: AWS itself
    assert aws.spark["spark.hadoop.fs.s3a.path.style.access"] == "false" and "spark.hadoop.fs.s3a.endpoint" not in aws.spark
    assert parse_config(config_doc(tmp_path), tmp_path).object_store is None  # local only: no S3A at all


def test_missing_file_names_the_environment_variable(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LAKENORM_CONFIG", raising=False)
    with pytest.raises(ConfigError, match="LAKENORM_CONFIG"):
        load_config()


def test_schema_file_per_source_and_per_stream(tmp_path):
    from normalization_core.schema import schema_document
    from normalization_core.schema.inference import infer_schema

    documents = [{"source": "x", "stream": s, "version": 1, "version_hash": "h",
                  "schema": schema_document(infer_schema(s, {((), "object"), (("k:id",), "bigint")}, "native"))}
                 for s in ("orders", "users")]
    (tmp_path / "all.yaml").write_text(yaml.safe_dump_all(documents))
    doc = config_doc(tmp_path, schema_file="all.yaml", streams={"users": {"schema_file": "all.yaml"}})
    src = parse_config(doc, tmp_path).source("shop")
    assert sorted(src.schemas) == ["orders", "users"] and src.schemas["orders"]["tables"][0]["name"] == "orders"
    assert src.streams["users"].schema["stream"] == "users"
    with pytest.raises(ConfigError, match="not the source's 'dlt'"):
        parse_config({**doc, "sources": [{**doc["sources"][0], "convention": "dlt"}]}, tmp_path)
