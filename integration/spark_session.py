"""The one SparkSession builder of the tests, the fault suite's child drivers, the demo and the benchmarks: a local
session with the UI off, quiet logs and `upsert-kafka` registered; what differs (master, app name, memory, jars,
settings) is a parameter."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def local_session(
    app: str,
    master: str = "local[2]",
    config: Mapping[str, str] | None = None,
    *,
    jars: Sequence[str] = (),
    log_level: str = "ERROR",
) -> SparkSession:
    """A SparkSession on `master` named `app`, `config` over the defaults (UI and console progress off), `jars` on
    its class path, the source registered. `local[N,F]` retries a failed task F-1 times, as a cluster does (plain
    `local[N]` never retries)."""
    from pyspark.sql import SparkSession

    settings = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false"}
    if jars:
        settings["spark.jars"] = ",".join(jars)
    builder = SparkSession.builder.master(master).appName(app)
    for key, value in {**settings, **(config or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    register_source(spark)
    return spark


def register_source(spark: SparkSession) -> None:
    """Register `upsert-kafka` unless Spark did already: the project is installed, so Spark registers it at start
    (a pyspark_* package with DefaultSource), and pyspark 4.0 refuses to register a name twice."""
    from pyspark.errors import AnalysisException
    from pyspark_upsert_kafka import UpsertKafkaDataSource

    try:
        spark.dataSource.register(UpsertKafkaDataSource)
    except AnalysisException as e:
        if "DATA_SOURCE_ALREADY_EXISTS" not in str(e):
            raise
