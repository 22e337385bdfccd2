"""The Spark-facing readers: plan partition ranges on the driver, read them on executors.

Driver side (planning) asks the brokers for partitions and offsets; executor side (`read`) gets
everything it needs inside its PartitionRange, opens its own consumer and yields Arrow batches.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pyarrow as pa
from confluent_kafka.admin import AdminClient
from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, SupportsTriggerAvailableNow

from connector import offsets
from connector.decode import RangeDecoder
from connector.fetch import fetch_range
from connector.kafka_clients import admin_client, list_offsets, topic_partitions
from connector.offsets import PartitionRange
from connector.read_options import ReadSpec

log = logging.getLogger("upsert_kafka")


def read_range(spec: ReadSpec, rng: InputPartition) -> Iterator[pa.RecordBatch]:
    if not isinstance(rng, PartitionRange):
        return iter(())  # Spark's stand-in InputPartition(None) for a plan with no ranges
    decoder = RangeDecoder(spec, rng)
    chunks = fetch_range(spec.kafka, rng)
    return decoder.changelog(chunks) if spec.changelog else decoder.table(chunks)


class OffsetPlanner:
    """Driver-side broker questions; keeps one admin client for the life of the query."""

    def __init__(self, spec: ReadSpec) -> None:
        self.spec = spec
        self._admin = None

    def __getstate__(self) -> dict:
        return {"spec": self.spec, "_admin": None}  # clients never travel to executors

    @property
    def admin(self) -> AdminClient:
        if self._admin is None:
            self._admin = admin_client(self.spec.kafka)
        return self._admin

    def offsets(self, which: str) -> dict[str, dict[int, int]]:
        topic = self.spec.topic
        partitions = topic_partitions(self.admin, self.spec.kafka, topic)
        return {topic: list_offsets(self.admin, self.spec.kafka, topic, partitions, which)}


class UpsertKafkaBatchReader(DataSourceReader):
    """A bounded read: each partition from its earliest offset to the end it has when planned."""

    def __init__(self, spec: ReadSpec) -> None:
        self.spec = spec

    def partitions(self) -> list[InputPartition]:
        planner = OffsetPlanner(self.spec)
        ranges = offsets.ranges_between(planner.offsets("earliest"), planner.offsets("latest"))
        return list(ranges)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_range(self.spec, partition)


class UpsertKafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """A changelog stream; the offset is Spark's Kafka form `{"topic": {"0": next, ...}}`."""

    def __init__(self, spec: ReadSpec) -> None:
        self.spec = spec
        self.planner = OffsetPlanner(spec)
        self.available_now: dict | None = None  # Trigger.AvailableNow's fixed target

    def prepareForTriggerAvailableNow(self) -> None:
        self.available_now = offsets.to_json(self.planner.offsets("latest"))

    def initialOffset(self) -> dict:
        return offsets.to_json(self.planner.offsets("earliest"))

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        assert isinstance(limit, ReadAllAvailable), f"unexpected read limit {limit}"
        if self.available_now is not None:
            return self.available_now
        return offsets.to_json(self.planner.offsets("latest"))

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        begin = offsets.from_json(start)
        stop = offsets.from_json(end)
        if any(p not in begin.get(t, {}) for t in stop for p in stop[t]):
            # A partition that appeared after `start` was planned is read from its earliest offset.
            earliest = self.planner.offsets("earliest")
            begin = {t: {**earliest.get(t, {}), **begin.get(t, {})} for t in stop}
        return list(offsets.ranges_between(begin, stop))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_range(self.spec, partition)

    def commit(self, end: dict) -> None:
        log.info("upsert-kafka: batch up to %s committed", end)
