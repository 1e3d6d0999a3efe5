"""`lakenorm normalize | tables` (SPEC §9), in process on the shared session, and two processes racing."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from normalization_core import commands
from normalization_core.config import load_config
from normalization_core.io.delta import read_table
from pipeline_assets.samples import SampleSpec, write_sample_packages

# Two cold drivers share two cores with the other test worker: one core each, and the quick compiler
# (README, BENCHMARKS.md: a short-lived JVM spends less CPU compiling).
CHILD_SPARK = {"master": "local[1]", "spark.driver.memory": "1g", "spark.sql.shuffle.partitions": "2",
               "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1"}


@pytest.fixture
def config_file(tmp_path) -> Path:
    (tmp_path / "landing").mkdir()
    doc = {"warehouse": "wh", "sources": [{"name": "shop", "landing": "landing"}],
           "spark": {"master": "local[2]", "spark.sql.shuffle.partitions": "2"}}
    (tmp_path / "lakenorm.yaml").write_text(yaml.safe_dump(doc))
    return tmp_path / "lakenorm.yaml"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = commands.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.slow
def test_normalize_pending_packages_then_nothing_then_exact_load_again(spark, capsys, config_file):
    ids = write_sample_packages(config_file.parent / "landing", SampleSpec(packages=2, orders=4, customers=2, events=3))
    code, out, err = run(capsys, "--config", str(config_file), "normalize")
    assert code == 0, err
    assert f"shop  {ids[1]}  _norm_raw_orders" in out and "4 rows  0 rejected" in out
    assert run(capsys, "--config", str(config_file), "normalize")[1] == "shop: nothing to normalize\n"
    code, out, _ = run(capsys, "--config", str(config_file), "normalize", "--load-id", ids[0])
    lines = out.splitlines()
    assert code == 0 and len([line for line in lines if "_norm_raw_" in line]) == 3
    tables = {line.split()[2] for line in lines}  # every raw, typed and child table is printed (SPEC §9)
    assert {"orders", "customers", "events"} <= tables and len(tables) >= 6, out
    assert all(line.startswith(f"shop  {ids[0]}  ") and " rows" in line for line in lines)
    code, out, _ = run(capsys, "--config", str(config_file), "tables")
    assert "shop._norm_raw_events" in out and " 6 rows" in out and "shop._norm_loads" in out


def test_errors_are_one_line_and_a_non_zero_exit(spark, capsys, config_file, tmp_path):
    code, out, err = run(capsys, "--config", str(config_file), "normalize", "--load-id", "missing")
    assert code == 1 and err.count("\n") == 1 and "no complete load package 'missing'" in err
    code, _, err = run(capsys, "--config", str(tmp_path / "nope.yaml"), "tables")
    assert code == 2 and err.startswith("lakenorm: configuration error in") and err.count("\n") == 1
    bad = config_file.parent / "landing" / "bad"
    bad.mkdir()
    (bad / "_manifest.json").write_text("[]")
    code, _, err = run(capsys, "--config", str(config_file), "normalize")
    assert code == 1 and "load package 'bad'" in err


@pytest.mark.slow
def test_two_processes_normalizing_one_load_id_leave_no_duplicates(spark, config_file):
    load_id = write_sample_packages(config_file.parent / "landing",
                                    SampleSpec(packages=1, orders=300, customers=50, events=400))[0]
    doc = yaml.safe_load(config_file.read_text())
    doc["spark"] = CHILD_SPARK
    config_file.write_text(yaml.safe_dump(doc))
    command = [sys.executable, "-m", "normalization_core.commands", "--config", str(config_file),
               "normalize", "--load-id", load_id]
    racers = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outcomes = [r.communicate(timeout=1200) for r in racers]  # generous: two cold drivers on a loaded machine
    assert [r.returncode for r in racers] == [0, 0], [o[1][-2000:] for o in outcomes]
    config = load_config(config_file)
    for table, lines in (("_norm_raw_orders", 300), ("_norm_raw_customers", 50), ("_norm_raw_events", 400)):
        rows = read_table(spark, config.table_path("shop", table))
        assert rows.count() == lines
        assert rows.select("_norm_raw_id").distinct().count() == lines
    assert read_table(spark, config.table_path("shop", "_norm_loads")).count() == 3
