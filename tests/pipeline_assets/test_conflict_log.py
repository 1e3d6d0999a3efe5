"""A Delta commit retried after a concurrent writer is a warning in the Dagster run's event log."""
from __future__ import annotations

from pathlib import Path

import dagster as dg
import yaml

from normalization_core.io import delta
from normalization_core.io.delta import merge_by_key, merged_table_properties, read_table

REPO = Path(__file__).resolve().parents[2]


def test_a_retried_commit_is_a_warning_in_the_runs_event_log(spark, tmp_path):
    path = str(tmp_path / "customers_scd")
    attempts = []

    def source():
        if not attempts:  # another run creates the table after this one found none: Delta refuses the creation
            spark.createDataFrame([(1, "other")], "k long, v string").write.format("delta").save(path)
        attempts.append(1)
        return spark.createDataFrame([(1, "mine", False)], "k long, v string, gone boolean")

    @dg.op
    def write_table() -> int:
        return merge_by_key(spark, path, source, ["k"], "gone", merged_table_properties(False))

    @dg.job
    def one_write():
        write_table()

    settings = yaml.safe_load((REPO / "dagster.yaml").read_text())
    with dg.instance_for_test(overrides={"python_logs": settings["python_logs"]}) as instance:
        result = one_write.execute_in_process(instance=instance)
        assert result.success
        logs = instance.all_logs(result.run_id)
    warnings = [e for e in logs if e.level == 30 and "concurrent commit on" in e.user_message]
    assert len(warnings) == 1
    assert f"{path} (attempt 1 of {delta.MAX_ATTEMPTS})" in warnings[0].user_message
    assert [tuple(r) for r in read_table(spark, path).collect()] == [(1, "mine")]
