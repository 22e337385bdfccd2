"""Registering the source in a test's SparkSession, on every supported pyspark."""

from __future__ import annotations

from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession
from pyspark_upsert_kafka import UpsertKafkaDataSource


def register_source(spark: SparkSession) -> None:
    """Register `upsert-kafka` unless Spark did already: the project is installed, so Spark registers it at start
    (a pyspark_* package with DefaultSource), and pyspark 4.0 refuses to register a name twice."""
    try:
        spark.dataSource.register(UpsertKafkaDataSource)
    except AnalysisException as e:
        if "DATA_SOURCE_ALREADY_EXISTS" not in str(e):
            raise
