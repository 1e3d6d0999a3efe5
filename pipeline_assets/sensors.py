"""The landing sensor: new complete packages -> partitions + one run per load ID."""
import dagster as dg

from normalization_core.api import LakenormConfig, SourceConfig, landed_packages
from pipeline_assets.partitions import load_ids_partitions


def new_load_ids(config: LakenormConfig, source: SourceConfig, instance: dg.DagsterInstance,
                 log: object) -> tuple[list[str], int]:
    """Complete units in the landing (any input kind) not yet registered as partitions; and how many were rejected."""
    found = landed_packages(config, source)
    for rejected in found.rejected:
        log.warning(rejected.reason)  # type: ignore[attr-defined]
    registered = set(instance.get_dynamic_partitions(load_ids_partitions(source).name))
    return [p.load_id for p in found.packages if p.load_id not in registered], len(found.rejected)


def load_run_requests(source: SourceConfig, load_ids: list[str]) -> list[dg.RunRequest]:
    return [dg.RunRequest(run_key=load_id, partition_key=load_id, tags={"lakenorm/source": source.name})
            for load_id in load_ids]


def build_landing_sensor(config: LakenormConfig, source: SourceConfig, job: object | None) -> dg.SensorDefinition:
    partitions = load_ids_partitions(source)

    @dg.sensor(name=f"{source.name}_landing_sensor", job=job, minimum_interval_seconds=30,
               default_status=dg.DefaultSensorStatus.RUNNING,
               description=f"Registers complete load packages in {source.landing} and normalizes each once.")
    def landing_sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        new, rejected = new_load_ids(config, source, context.instance, context.log)
        if not new:
            return dg.SensorResult(skip_reason=f"no new complete packages ({rejected} rejected)",
                                   cursor=context.cursor)
        requests = load_run_requests(source, new) if job is not None else []
        return dg.SensorResult(run_requests=requests, cursor=new[-1],
                               dynamic_partitions_requests=[partitions.build_add_request(new)])

    return landing_sensor
