"""`lakenorm normalize | tables` (SPEC §9), in process on the shared session, and two processes racing."""
from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
import yaml

from lakenorm_app import commands
from lakenorm_app.samples import SampleSpec, write_sample_packages
from normalization_core.configuration.config import load_config
from normalization_core.io.delta import read_table, table_version
from normalization_core.runtime.engine import ENGINE_DIR_ENV
from tests.normalization_core.runtime.engine_project import first_commit

DAY = "2024_06_01_1717200000000"
"""An Airbyte sync's day and epoch as its S3 destination names its files."""
# A cold driver beside the engine and the other test worker: one core, and the quick compiler
# (docs/how-to/configuration.md, BENCHMARKS.md: a short-lived JVM spends less CPU compiling).
JVM_OUTPUT = re.compile(r"^\s+at [\w$.<>]+\(|^\d\d/\d\d/\d\d \d\d:\d\d:\d\d |^WARNING: |log4j|setLogLevel", re.M)
"""What the driver JVM prints when left to Spark's defaults: stack frames, log lines, start-up notes."""
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


def test_json_prints_the_results_for_scripts(spark, capsys, config_file):
    ids = write_sample_packages(config_file.parent / "landing", SampleSpec(packages=1, orders=3, customers=2, events=2))
    bad = config_file.parent / "landing" / "bad"
    bad.mkdir()
    (bad / "_manifest.json").write_text("[]")
    code, out, err = run(capsys, "--config", str(config_file), "normalize", "--json")
    document = json.loads(out)  # stdout is the document alone
    assert code == 1 and "load package 'bad'" in err  # the rejected package: exit status and stderr as without --json
    assert [e["load_id"] for e in document["errors"]] == [None] and "bad" in document["errors"][0]["error"]
    [load] = document["loads"]
    assert load["source"] == "shop" and load["load_id"] == ids[0]
    assert {name: s["raw_lines"] for name, s in load["streams"].items()} == {"orders": 3, "customers": 2, "events": 2}
    assert load["streams"]["orders"]["typed_rows"]["orders"] == 3 and load["streams"]["events"]["rejected_lines"] == 0
    shutil.rmtree(bad)
    code, out, _ = run(capsys, "--config", str(config_file), "normalize", "--json")
    assert code == 0 and json.loads(out) == {"loads": [], "errors": [], "warnings": [], "seconds": {},
                                             "notes": [{"source": "shop", "message": "nothing to normalize",
                                                        "settling": None}]}


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
def test_two_processes_normalizing_one_load_id_leave_no_duplicates(spark, shared_engine, config_file):
    """A classic driver and a client of the suite's engine (a JVM of its own) normalize the same load: the client
    starts as the driver commits its first table, so that their commits to the same tables interleave."""
    load_id = write_sample_packages(config_file.parent / "landing",
                                    SampleSpec(packages=1, orders=300, customers=50, events=400))[0]
    doc = yaml.safe_load(config_file.read_text())
    client_file = config_file.with_name("client.yaml")  # the same landing and warehouse
    client_file.write_text(yaml.safe_dump({**doc, "spark": {"master": "local[2]", "remote": shared_engine.address}}))
    config_file.write_text(yaml.safe_dump({**doc, "spark": CHILD_SPARK}))
    command = [sys.executable, "-m", "lakenorm_app.commands", "--config", "{}", "normalize", "--load-id", load_id]
    driver = racer(command, config_file)
    first_commit(config_file.parent / "wh", driver)
    client = racer(command, client_file, {ENGINE_DIR_ENV: str(shared_engine.directory)})
    outcomes = [r.communicate(timeout=1200) for r in (driver, client)]  # generous: a cold driver, a loaded machine
    assert [r.returncode for r in (driver, client)] == [0, 0], [o[1][-2000:] for o in outcomes]
    for _, err in outcomes:  # a successful run prints only lakenorm's lines (a racer's retry notes)
        assert not JVM_OUTPUT.search(err), err[-3000:]
    config = load_config(config_file)
    for table, lines in (("_norm_raw_orders", 300), ("_norm_raw_customers", 50), ("_norm_raw_events", 400)):
        rows = read_table(spark, config.table_path("shop", table))
        assert rows.count() == lines
        assert rows.select("_norm_raw_id").distinct().count() == lines
    assert read_table(spark, config.table_path("shop", "_norm_loads")).count() == 3


def racer(command: list[str], config_file: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    argv = [str(config_file) if part == "{}" else part for part in command]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})})


def test_files_still_settling_are_said_and_waited_for(spark, capsys, tmp_path, load_case):
    """Airbyte destination files just written: `normalize` says what waits and from when it is readable (exit 0),
    `normalize --wait` waits for them and normalizes them, a later `normalize` finds nothing."""
    case = load_case("inputs/airbyte_destination.json")
    landing = tmp_path / "landing"
    files = {"public/orders/2024_06_01_1717200000000_0.jsonl": case["orders"][:2],  # sync 101
             "public/customers/2024_06_01_1717200000000_0.jsonl": case["customers"],  # sync 101
             "public/v1_orders/2024_06_02_1717300000000_0.jsonl": case["v1_orders"]}  # V1: the epoch's load
    for relative, records in files.items():
        (landing / relative).parent.mkdir(parents=True, exist_ok=True)
        (landing / relative).write_text("".join(json.dumps(r) + "\n" for r in records))
        # written "now", plus a margin so that a slow machine does not see them settled before the command lists them
        os.utime(landing / relative, (time.time() + 5,) * 2)
    doc = {"warehouse": "wh", "spark": {"master": "local[2]", "spark.sql.shuffle.partitions": "2"},
           "sources": [{"name": "shop", "landing": "landing", "input": "airbyte_destination", "settle_seconds": 2}]}
    (tmp_path / "lakenorm.yaml").write_text(yaml.safe_dump(doc))
    newest = max((landing / relative).stat().st_mtime for relative in files)
    readable = datetime.fromtimestamp(math.ceil(newest + 2), tz=timezone.utc).strftime("%H:%M:%S")

    code, out, err = run(capsys, "--config", str(tmp_path / "lakenorm.yaml"), "normalize")
    assert (code, err) == (0, "")
    assert re.fullmatch(rf"shop: nothing to normalize yet; 3 files \(2 packages\) still settling, "
                        rf"readable from (\d{{4}}-\d\d-\d\d )?{readable} UTC \(in \d+ s\)\n", out), out

    code, out, err = run(capsys, "--config", str(tmp_path / "lakenorm.yaml"), "normalize", "--wait", "120")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("shop: waiting for 3 files (2 packages) still settling, readable from "), out
    assert {line.split()[1] for line in lines[1:]} == {"101", "1717300000000"}, out
    assert "shop  101  orders " in out and "shop  1717300000000  v1_orders " in out
    assert not [line for line in lines[1:] if "settling" in line or "nothing" in line], out

    assert run(capsys, "--config", str(tmp_path / "lakenorm.yaml"), "normalize", "--wait")[1] == \
        "shop: nothing to normalize\n"
    config = load_config(tmp_path / "lakenorm.yaml")
    assert read_table(spark, config.table_path("shop", "orders")).count() == 2


def test_a_touched_file_is_nothing_to_do_and_a_replaced_one_is_one_warning_once(spark, capsys, tmp_path, load_case):
    """Sync 101 normalized; then its orders file touched (the same bytes, another time), its customers file replaced
    (the same size, other bytes) and a new sync landed: `normalize` normalizes the new sync, says the replaced file in
    one warning line and exits 0, and writes no table of sync 101 again; the next run says nothing more."""
    case = load_case("inputs/airbyte_destination.json")
    landing = tmp_path / "landing"
    orders, customers = landing / f"public/orders/{DAY}_0.jsonl", landing / f"public/customers/{DAY}_0.jsonl"
    for path, records in ((orders, case["orders"][:2]), (customers, case["customers"])):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
        os.utime(path, (time.time() - 3600,) * 2)
    doc = {"warehouse": "wh", "spark": {"master": "local[2]", "spark.sql.shuffle.partitions": "2"},
           "sources": [{"name": "shop", "landing": "landing", "input": "airbyte_destination"}]}
    (tmp_path / "lakenorm.yaml").write_text(yaml.safe_dump(doc))
    normalize = ("--config", str(tmp_path / "lakenorm.yaml"), "normalize")
    assert run(capsys, *normalize)[0] == 0
    config = load_config(tmp_path / "lakenorm.yaml")
    tables = ("_norm_raw_orders", "orders", "orders_scd", "_norm_raw_customers", "customers", "_norm_loads")
    versions = {t: table_version(spark, config.table_path("shop", t)) for t in tables}

    os.utime(orders, (time.time() - 1800,) * 2)  # a copy without -p, a sync, a restore
    customers.write_text(customers.read_text().replace("a@example.com", "z@example.com"))
    os.utime(customers, (time.time() - 1800,) * 2)
    v1 = landing / "public/v1_orders/2024_06_02_1717300000000_0.jsonl"  # a new sync, V1
    v1.parent.mkdir(parents=True)
    v1.write_text("".join(json.dumps(r) + "\n" for r in case["v1_orders"]))
    os.utime(v1, (time.time() - 1800,) * 2)
    code, out, err = run(capsys, *normalize)
    assert code == 0 and "shop  1717300000000  v1_orders " in out and "101" not in out, out
    assert err.startswith("lakenorm: warning: shop: file 'public/customers/2024_06_01_1717200000000_0.jsonl', "
                          "normalized in load '101', was replaced by other content") and err.count("\n") == 1, err
    assert {t: table_version(spark, config.table_path("shop", t)) for t in tables} == {
        **versions, "_norm_loads": versions["_norm_loads"] + 1}  # the new sync's registry rows, nothing of 101
    assert run(capsys, *normalize) == (0, "shop: nothing to normalize\n", "")  # said once
    emails = [r.email for r in read_table(spark, config.table_path("shop", "customers")).orderBy("id").collect()]
    assert emails == ["a@example.com", "b@example.com"]  # not read: `normalize --load-id 101` would read it


def test_wait_is_bounded_and_says_what_still_waits(spark, capsys, tmp_path):
    """`--wait 0`: nothing is waited for; the settling files are named on stderr and the exit status is 3."""
    (tmp_path / "landing").mkdir()
    (tmp_path / "landing" / "run-1.jsonl").write_text('{"type": "SCHEMA", "stream": "a", "schema": {}}\n')
    os.utime(tmp_path / "landing" / "run-1.jsonl", (time.time() + 3600,) * 2)  # "written" an hour ahead
    doc = {"warehouse": "wh", "spark": {"master": "local[2]", "spark.sql.shuffle.partitions": "2"},
           "sources": [{"name": "shop", "landing": "landing", "input": "singer"}]}
    (tmp_path / "lakenorm.yaml").write_text(yaml.safe_dump(doc))
    code, out, err = run(capsys, "--config", str(tmp_path / "lakenorm.yaml"), "normalize", "--wait", "0")
    assert code == commands.WAIT_TIMED_OUT == 3
    assert out.startswith("shop: waiting for 1 file (1 package) still settling, readable from ")
    assert err.startswith("lakenorm: shop: still waiting after 0 s: 1 file (1 package) still settling, ") and \
        err.count("\n") == 1, err
    with pytest.raises(SystemExit) as usage:
        run(capsys, "--config", str(tmp_path / "lakenorm.yaml"), "normalize", "--wait", "-1")
    assert usage.value.code == 2 and "not a number of seconds (0 or more): '-1'" in capsys.readouterr().err
