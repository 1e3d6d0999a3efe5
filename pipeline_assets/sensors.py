"""The landing sensor: new complete packages -> partitions + one run per load ID."""
import dagster as dg

from normalization_core.config import SourceConfig
from normalization_core.io.packages import discover_packages
from pipeline_assets.partitions import load_ids_partitions


def build_landing_sensor(source: SourceConfig, job: object | None) -> dg.SensorDefinition:
    partitions = load_ids_partitions(source)

    @dg.sensor(name=f"{source.name}_landing_sensor", job=job, minimum_interval_seconds=30,
               default_status=dg.DefaultSensorStatus.RUNNING,
               description=f"Registers complete load packages in {source.landing} and normalizes each once.")
    def landing_sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        found = discover_packages(source.landing, source.name)
        for rejected in found.rejected:
            context.log.warning(rejected.reason)
        registered = set(context.instance.get_dynamic_partitions(partitions.name))
        new = [p.load_id for p in found.packages if p.load_id not in registered]
        if not new:
            return dg.SensorResult(skip_reason=f"no new complete packages ({len(found.rejected)} rejected)",
                                   cursor=context.cursor)
        requests = [dg.RunRequest(run_key=load_id, partition_key=load_id, tags={"lakenorm/source": source.name})
                    for load_id in new] if job is not None else []
        return dg.SensorResult(run_requests=requests, cursor=new[-1],
                               dynamic_partitions_requests=[partitions.build_add_request(new)])

    return landing_sensor
