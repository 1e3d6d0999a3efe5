"""The Spark session as a Dagster resource: built from the configuration, stopped cleanly."""
from __future__ import annotations

from contextlib import AbstractContextManager, ExitStack
from typing import Any

import dagster as dg
from pydantic import PrivateAttr
from pyspark.sql import SparkSession

from normalization_core.api import lost_engine_errors, serving, spark_session


class SparkSessionResource(dg.ConfigurableResource):
    """A Delta-enabled SparkSession for one run, started when the run first needs it (`start`: a run that
    normalizes a few small packages starts its JVM for a small input); stopped afterwards if the run started it.
    With `remote` naming the local engine, the run holds its lease from its start to its end (`runtime.engine_runs`:
    the engine is recycled between runs, never inside one)."""

    spark_conf: dict[str, str] = {"master": "local[2]"}
    _session: Any = PrivateAttr(default=None)
    _stack: Any = PrivateAttr(default=None)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        self._stack = ExitStack()

    def start(self, input_bytes: int | None = None) -> SparkSession:
        """The run's session, started now if it is not yet; `input_bytes`: what the run will read, when known."""
        if self._stack is None:
            raise RuntimeError("SparkSessionResource is used outside of a run")
        if self._session is None:
            self._stack.enter_context(serving(self.spark_conf, on_recycle=dg.get_dagster_logger().warning))
            self._session = self._stack.enter_context(
                spark_session(self.spark_conf, app_name="lakenorm-dagster", input_bytes=input_bytes))
        return self._session

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        if self._stack is not None:
            self._stack.close()
        self._session = self._stack = None

    def lost_engine_errors(self) -> AbstractContextManager[None]:
        """A block of the run's work: an engine (`spark.remote`) lost in it is one clear error."""
        return lost_engine_errors(self.spark_conf.get("remote"))

    @property
    def spark(self) -> SparkSession:
        return self.start()
