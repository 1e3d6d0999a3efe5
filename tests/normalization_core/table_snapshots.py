"""Configurations written as files, `lakenorm normalize` in this process, and every table of a source as
(columns, sorted rows): for comparing a run on an object store or a cluster with a local one."""
from __future__ import annotations

from pathlib import Path

import yaml

from lakenorm_app.commands import main
from lakenorm_app.samples import SampleSpec, write_catalog, write_sample_packages
from normalization_core.configuration.config import load_config
from normalization_core.io.delta import read_table
from normalization_core.plans.source_tables import SourceTables
from normalization_core.runtime.spark import build_spark_session

VOLATILE = ("normalized_at", "inserted_at", "modified_ms", "checksum", "table_versions")
"""Columns that hold when a run happened (or a file's upload time, how its store names its bytes: a local file's
SHA-256, an object's ETag, or which commits it took), not what it produced."""


def write_config(folder: Path, warehouse: str, source: dict, endpoint: str | None = None,
                 spark: dict | None = None) -> Path:
    doc: dict = {"warehouse": warehouse, "sources": [source]}
    if endpoint:
        doc["object_store"] = {"endpoint": endpoint, "region": "us-east-1"}
    if spark:
        doc["spark"] = spark
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "lakenorm.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def sample_shop(folder: Path, bucket) -> tuple[Path, dict]:
    """The sample packages in a local landing (`<folder>/local`) and in the bucket (`landing/shop`):
    the local configuration, and the source without its landing."""
    landing = folder / "local" / "landing"
    write_sample_packages(landing, SampleSpec(packages=2, orders=30, customers=8, events=20))
    bucket.upload_tree(landing, "landing/shop")
    source = {"name": "shop", "catalog": str(write_catalog(folder / "catalog.json"))}
    return write_config(folder / "local", "warehouse", {**source, "landing": "landing"}), source


SAMPLE_TABLES = {"orders", "orders_scd", "customers", "_norm_loads", "_norm_versions"}


def normalize(config_file: Path, capsys) -> str:
    assert main(["--config", str(config_file), "normalize"]) == 0, capsys.readouterr().err
    return capsys.readouterr().out


def snapshot(config_file: Path) -> dict[str, tuple[list[str], list[tuple]]]:
    """Every table of the (first) source: its columns and its rows (sorted), without the run-time columns."""
    config = load_config(config_file)
    spark = build_spark_session(config.spark)
    source = config.sources[0]
    tables = {}
    for table in SourceTables(config, source).stored_tables():
        df = read_table(spark, config.table_path(source.name, table))
        df = df.drop(*[c for c in df.columns if c.endswith(VOLATILE)])
        tables[table] = (df.columns, sorted(tuple(map(repr, r)) for r in df.collect()))  # test: assert rows
    return tables


def assert_same_tables(local: Path, other: Path, expected: set[str]) -> None:
    local_tables, other_tables = snapshot(local), snapshot(other)
    assert set(other_tables) == set(local_tables) and expected <= set(other_tables)
    for table, (columns, rows) in local_tables.items():
        assert other_tables[table][0] == columns, table
        assert other_tables[table][1] == rows, table
        assert rows or table.endswith("quarantine"), f"{table} is empty: the comparison would prove nothing"
