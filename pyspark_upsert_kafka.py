"""Spark imports installed top-level `pyspark_*` modules and registers their `DefaultSource`:
installing this package is all it takes for `format("upsert-kafka")` to work."""

from connector import UpsertKafkaDataSource as DefaultSource

__all__ = ["DefaultSource"]
