"""The Spark session as a Dagster resource: built from the configuration, stopped cleanly."""
from __future__ import annotations

from typing import Any

import dagster as dg
from pydantic import PrivateAttr
from pyspark.sql import SparkSession

from normalization_core.io.spark import build_spark_session


class SparkSessionResource(dg.ConfigurableResource):
    """A Delta-enabled SparkSession for one run; stops it afterwards if this run started it."""

    spark_conf: dict[str, str] = {"master": "local[2]"}
    _session: Any = PrivateAttr(default=None)
    _owns_session: bool = PrivateAttr(default=False)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        existing = SparkSession.getActiveSession()
        self._session = build_spark_session(self.spark_conf, app_name="lakenorm-dagster")
        self._owns_session = existing is None

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        if self._owns_session and self._session is not None:
            self._session.stop()
        self._session = None

    @property
    def spark(self) -> SparkSession:
        if self._session is None:
            raise RuntimeError("SparkSessionResource is used outside of a run")
        return self._session
