"""The local engine (`lakenorm engine start | status | stop`, runtime/engine.py) and sessions that are its Spark Connect
clients (`spark: {remote: sc://host:port}`): one real server for the module; runs at once through it (two load
IDs of one source, another source) keep every guarantee; an idle engine past its limits is restarted before a run
(runtime/engine_runs.py); a run whose server is killed mid-pass fails in one line, and its retry after `lakenorm engine
start` completes it. What the runs through the engine write equals what the classic local session writes, table by
table, under each convention (native, airbyte, dlt), disposition (append, overwrite, append_dedup and its SCD
history) and package format (records, Airbyte messages); the Delta writes' counts arrive over Connect, delta-rs
reads every table. (tests/deploy/test_daemon_concurrency.py: Dagster runs through an engine.)

pyspark builds a process's columns (`pyspark.sql.functions`) either for classic Spark or for Spark Connect, per
process: each client runs in a process of its own (as the CLI or a Dagster run would), beside the test process's
classic session, which computes the expected tables and reads the written ones.
"""
from __future__ import annotations

import json
import shutil
from types import SimpleNamespace

import pytest
from deltalake import DeltaTable

from lakenorm_app.samples import write_catalog
from normalization_core.configuration.config import load_config, parse_config
from normalization_core.errors import ConfigError
from normalization_core.errors import LakenormError
from normalization_core.passes.normalize import normalize_loads
from normalization_core.plans.source_tables import SourceTables
from normalization_core.runtime import engine
from normalization_core.runtime.engine_runs import local_engine, recycle_reason, runs_served
from normalization_core.runtime.spark import build_spark_session, remote_address
from tests.normalization_core.runtime.engine_project import (
    ENGINE_CONF,
    LAKE,
    OTHER,
    SOURCE,
    commits,
    finished,
    free_port,
    kill_at_first_commit,
    lakenorm,
    load_ids,
    table_rows,
    write_project,
)



def test_remote_addresses():
    assert remote_address("sc://127.0.0.1:15010") == ("127.0.0.1", 15010)
    assert remote_address("sc://engine") == ("engine", 15002)
    assert remote_address("sc://engine:443/;token=abc;use_ssl=true") == ("engine", 443)


def test_a_client_whose_engine_is_down_gets_one_line_naming_the_address_and_the_command():
    remote = f"sc://127.0.0.1:{free_port()}"
    with pytest.raises(LakenormError) as err:
        build_spark_session({"master": "local[2]", "remote": remote})
    message = str(err.value)
    assert remote in message and "lakenorm engine start" in message and "\n" not in message


def test_status_and_stop_without_an_engine(tmp_path):
    assert engine.status(tmp_path).state == "stopped"
    assert engine.status(tmp_path).text() == "engine: not running"
    assert engine.stop(tmp_path) is None
    assert local_engine({"master": "local[2]", "remote": "sc://127.0.0.1:15002"}, tmp_path) is None


def test_the_engines_limits_are_validated_settings_no_spark_property(tmp_path):
    spark = {"remote": "sc://127.0.0.1:15010", "engine_max_runs": 50, "engine_max_memory": "6g"}
    sources = [{"name": SOURCE, "landing": ".", "catalog": str(write_catalog(tmp_path / "catalog.json"))}]
    assert parse_config({"warehouse": "w", "sources": sources, "spark": spark}, tmp_path).spark[
        "engine_max_runs"] == "50"
    for wrong in ({"engine_max_runs": 0}, {"engine_max_memory": "lots"}, {"engine_max_run": 5}):
        with pytest.raises(ConfigError, match="engine_max_"):
            parse_config({"warehouse": "w", "sources": sources, "spark": wrong}, tmp_path)
    conf = engine.server_conf({**ENGINE_CONF, **spark}, "127.0.0.1", 15010)
    assert not [key for key in conf if "engine_max" in key or key == "remote"]


def test_the_server_gets_lakenorms_driver_settings_and_connects_binding(tmp_path):
    conf = engine.server_conf({**ENGINE_CONF, "remote": "sc://127.0.0.1:15010"}, "127.0.0.1", 15010)
    assert conf["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"
    assert conf["spark.sql.session.timeZone"] == "UTC" and conf["spark.driver.memory"] == "2g"
    assert conf["spark.connect.grpc.binding.port"] == "15010" and "delta-spark" in conf["spark.jars"]
    command = engine.server_command(conf)
    assert command[command.index("--class") + 1] == engine.CONNECT_SERVER_CLASS
    assert "remote" not in " ".join(command)




@pytest.fixture(scope="module")
def running_engine(tmp_path_factory):
    """One real Spark Connect server for the module, on a free loopback port, stopped afterwards (a test that
    kills it starts it again in the same folder, at the same address)."""
    directory = tmp_path_factory.mktemp("engine")
    started = engine.start(ENGINE_CONF, port=free_port(), directory=directory)
    try:
        yield started, directory
    finally:
        engine.stop(directory)
        assert engine.status(directory).state == "stopped"


@pytest.fixture(scope="module")
def classic(spark, tmp_path_factory):
    """What the test project's sources hold once normalized by the classic local session, in one pass each: their
    load results, rows and commits per table."""
    sources = (SOURCE, OTHER, LAKE)
    config_file = write_project(tmp_path_factory.mktemp("classic"), {"master": "local[2]"}, sources)
    config = load_config(config_file)
    results = {s: summaries(normalize_loads(spark, config, s, load_ids(config_file, s))) for s in sources}
    return SimpleNamespace(results=results, rows={s: table_rows(spark, config_file, s) for s in sources},
                           commits={s: commits(config_file, s) for s in sources})


def summaries(results) -> list[dict]:
    return [{s: r.typed_rows for s, r in result.streams.items()} for result in results]


@pytest.mark.slow
def test_runs_at_once_through_one_engine_keep_every_guarantee(running_engine, classic, spark, tmp_path):
    """Three client processes at once: the two loads of one source (the same tables: Delta's conflicts, retried)
    and another source; none recycles the engine under the others."""
    started, directory = running_engine
    served = runs_served(directory)
    spark_conf = {"master": "local[2]", "remote": started.address, "engine_max_runs": served + 3}
    config_file = write_project(tmp_path, spark_conf, (SOURCE, OTHER))
    first, second = load_ids(config_file)
    clients = [lakenorm(config_file, directory, "normalize", "--source", SOURCE, "--load-id", first),
               lakenorm(config_file, directory, "normalize", "--source", SOURCE, "--load-id", second),
               lakenorm(config_file, directory, "normalize", "--source", OTHER)]
    ended = [finished(client) for client in clients]
    assert [code for code, _, _ in ended] == [0, 0, 0], [err[-3000:] for _, _, err in ended]
    assert not [err for _, _, err in ended if "restarting the engine" in err]
    assert engine.recorded(directory).pid == started.pid and runs_served(directory) == served + 3

    written = {source: table_rows(spark, config_file, source) for source in (SOURCE, OTHER)}
    for source in (SOURCE, OTHER):  # nothing lost, nothing twice: the tables of one classic pass
        found, expected = written[source], classic.rows[source]
        if source == SOURCE:  # the rows each run wrote per table depend on which run committed first
            found, expected = without_written_counts(found), without_written_counts(expected)
        assert found == expected, [t for t in found if found[t] != expected.get(t)]
    versions: dict[str, dict[str, int]] = {}  # each load recorded its own commit to the tables both wrote
    for row in map(json.loads, written[SOURCE]["_norm_loads"]):
        versions.setdefault(row["load_id"], {}).update(row["table_versions"])
    both = set(versions[first]) & set(versions[second])
    assert both and all(versions[first][t] != versions[second][t] for t in both), versions
    # one commit per table and run: the other source's single run commits as the classic pass did; the source
    # the two runs shared got at most two runs' commits (a conflict's lost attempt commits nothing)
    assert commits(config_file, OTHER) == classic.commits[OTHER]
    shared = commits(config_file, SOURCE)
    assert all(count <= 2 * classic.commits[SOURCE][table] for table, count in shared.items()), shared
    # served its limit: the next run finds the engine due and idle
    due = recycle_reason(engine.recorded(directory), load_config(config_file).spark, directory)
    assert due == f"it served {served + 3} runs (engine_max_runs {served + 3})"


def without_written_counts(tables: dict[str, list[str]]) -> dict[str, list[str]]:
    """The tables with the registry's `rows` (what the run of each load wrote to each table) and `table_versions`
    (the versions of its commits) left out."""
    def registry_row(row: str) -> str:
        return json.dumps({k: v for k, v in json.loads(row).items() if k not in ("rows", "table_versions")},
                          sort_keys=True)
    return {t: sorted(map(registry_row, rows)) if t == "_norm_loads" else rows for t, rows in tables.items()}


@pytest.mark.slow
def test_an_idle_engine_past_its_limits_is_restarted_before_a_run(running_engine, tmp_path):
    started, directory = running_engine
    before = engine.recorded(directory)
    config_file = write_project(tmp_path, {"master": "local[2]", "remote": started.address,
                                           "engine_max_memory": "64m"})
    for package in (tmp_path / f"landing_{SOURCE}").iterdir():  # a run with nothing to normalize
        shutil.rmtree(package)
    code, out, err = finished(lakenorm(config_file, directory, "normalize"))
    assert code == 0, err[-3000:]
    assert f"lakenorm: restarting the engine at {started.address}: its server holds " in err
    after = engine.recorded(directory)
    assert after.pid != before.pid and after.conf == before.conf and after.address == started.address
    assert engine.status(directory).state == "running" and runs_served(directory) == 1
    assert f"{SOURCE}: nothing to normalize" in out


@pytest.mark.slow
def test_a_run_that_loses_its_engine_fails_in_one_line_and_its_retry_after_engine_start_completes_it(
        running_engine, classic, spark, tmp_path):
    started, directory = running_engine
    config_file = write_project(tmp_path, {**ENGINE_CONF, "remote": started.address}, (LAKE,))
    client = lakenorm(config_file, directory, "normalize")
    kill_at_first_commit(config_file, engine.recorded(directory).pid, client)
    code, _, err = finished(client)
    said = [line for line in err.splitlines() if line.startswith("lakenorm:")]
    assert code == 2 and len(said) == 1, err[-3000:]
    assert f"lost the Spark Connect engine at {started.address}" in said[0] and "lakenorm engine start" in said[0]
    assert engine.status(directory).state == "stopped"

    code, out, err = finished(lakenorm(config_file, directory, "engine", "start"))
    assert code == 0 and f"engine: started at {started.address}" in out, err[-3000:]
    code, out, err = finished(lakenorm(config_file, directory, "normalize", "--json"))
    assert code == 0, err[-3000:]
    # the counts of each load's typed and child tables (Observation on the Delta writes) arrive over Connect
    loads = json.loads(out)["loads"]
    assert [{s: r["typed_rows"] for s, r in load["streams"].items()} for load in loads] == classic.results[LAKE]
    found = table_rows(spark, config_file, LAKE)  # raw, typed, child tables and the registry: each load once
    assert found == classic.rows[LAKE], [t for t in found if found[t] != classic.rows[LAKE].get(t)]
    assert {"orders", "events", "customers", "orders__line_items", "orders_scd"} <= set(found), sorted(found)
    config = load_config(config_file)
    unreadable = {}
    for table in found:  # delta-rs (the ledger's and the sensor's reader, and other engines') reads them
        try:
            DeltaTable(SourceTables(config, config.source(LAKE)).path(table))
        except Exception as err:  # noqa: BLE001
            unreadable[table] = str(err).splitlines()[0]
    assert unreadable == {}


@pytest.mark.slow
def test_a_load_normalized_after_a_newer_one_recomputes_its_keys_history_over_the_engine(
        running_engine, classic, spark, tmp_path):
    """The second package normalized first, then the first, whose versions of the keys both hold are older: over
    Spark Connect too, the late load's history write finds that within the write, fails before it commits, and
    recomputes the keys' whole history. The tables equal one classic pass over both."""
    started, directory = running_engine
    config_file = write_project(tmp_path, {**ENGINE_CONF, "remote": started.address})
    first, second = load_ids(config_file)
    for load_id in (second, first):
        code, _, err = finished(lakenorm(config_file, directory, "normalize", "--source", SOURCE, "--load-id", load_id))
        assert code == 0, err[-3000:]
    found, expected = (without_written_counts(rows) for rows in (table_rows(spark, config_file), classic.rows[SOURCE]))
    assert found == expected, [t for t in found if found[t] != expected.get(t)]
    config = load_config(config_file)
    history = DeltaTable(SourceTables(config, config.source(SOURCE)).path("orders_scd")).history()
    late = max(history, key=lambda commit: commit["version"])["operationParameters"]["predicate"]
    assert late.startswith("`id` BETWEEN") and "_norm_valid_to" not in late  # the range's rows, all of them
