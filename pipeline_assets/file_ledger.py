"""The file ledger job of a producer input's source (SPEC §2.4): what the landing sensor found about files normalized
before, recorded. A file touched with its bytes unchanged is recorded silently (not compared again); a file replaced
by other bytes is said once, as a warning in the run's event log, and recorded so that no later tick says it again.
The sensor, which starts no JVM, requests one run per set of such files (its run key), this job writes the ledger.

(No `from __future__ import annotations`: Dagster reads the op's context annotation as a class.)
"""

import hashlib
from collections.abc import Sequence

import dagster as dg

from normalization_core.api import LakenormConfig, SourceConfig, landed_packages, record_changed_files
from pipeline_assets.resources import SparkSessionResource


def file_ledger_job_name(source: SourceConfig) -> str:
    return f"{source.name}_file_ledger"


def file_ledger_job(config: LakenormConfig, source: SourceConfig) -> dg.JobDefinition:
    @dg.op(name=f"{source.name}_record_changed_files",
           description="Records files normalized before and listed again with another size or time: touched "
                       "(the same bytes) or replaced (other bytes: a warning, once).")
    def record(context: dg.OpExecutionContext, spark: SparkSessionResource) -> None:
        changed = landed_packages(config, source).changed  # listed again: what is still unrecorded now
        for change in changed:
            if change.warning:
                context.log.warning(change.warning)
        if changed:
            record_changed_files(spark.start(input_bytes=0), config, source, changed)
        replaced = sum(1 for c in changed if c.warning)
        context.log.info(f"{source.name}: {len(changed) - replaced} touched and {replaced} replaced files recorded")

    # its own Spark resource: a sensor's job bound to the code location's resources later is copied by Dagster
    # 1.13 with a beta parameter (`owners`), a warning at every load of the code location
    @dg.job(name=file_ledger_job_name(source), resource_defs={"spark": SparkSessionResource(spark_conf=config.spark)},
            executor_def=dg.in_process_executor,
            description=f"Records touched and replaced producer files of source {source.name!r} in its file ledger.")
    def job() -> None:
        record()

    return job


def changed_files_request(source: SourceConfig, changed: Sequence) -> list[dg.RunRequest]:
    """A run of the file ledger job for `changed` (`Discovery.changed`), keyed by those files as listed: a tick
    that finds the same files before the run has recorded them requests nothing more."""
    if not changed:
        return []
    listed = "\n".join(f"{c.now.file.path}\t{c.now.file.size}\t{c.now.file.modified_ms}" for c in changed)
    return [dg.RunRequest(run_key=f"files-{hashlib.sha256(listed.encode()).hexdigest()[:16]}",
                          job_name=file_ledger_job_name(source), tags={"lakenorm/source": source.name})]
