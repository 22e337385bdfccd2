"""Shared helpers of the reader tests (tests/test_read_*.py): records with chosen partitions and
timestamps, batch and streaming reads, and a foreachBatch collector."""

from __future__ import annotations

import time
from collections.abc import Iterable

import orjson
from confluent_kafka import Producer

from tests.test_streaming import Collector, wait_for

__all__ = ["Collector", "load", "rec", "recent_minute", "rows_of", "run_available_now", "send", "stream", "wait_for"]

CHANGES = "id INT, name STRING, _change_type STRING"


def rec(i: int, name: str | None = "v", partition: int | None = None, ts: int | None = None) -> tuple:
    """A JSON record of key {"id": i}; name=None makes it a tombstone."""
    value = None if name is None else orjson.dumps({"id": i, "name": name})
    return (orjson.dumps({"id": i}), value, partition, ts)


def send(bootstrap: str, topic: str, records: Iterable[tuple], headers: list | None = None) -> None:
    """Produce (key, value, partition, timestamp_ms) records synchronously, in order."""
    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random", "linger.ms": 5})
    errors: list = []
    for key, value, partition, ts in records:
        kwargs: dict = {"on_delivery": lambda e, m: e and errors.append(e)}
        if partition is not None:
            kwargs["partition"] = partition
        if ts is not None:
            kwargs["timestamp"] = ts
        if headers is not None:
            kwargs["headers"] = headers
        producer.produce(topic, value, key, **kwargs)
    assert producer.flush(30) == 0 and not errors, errors


def load(spark, opts: dict, schema: str = CHANGES):
    return spark.read.format("upsert-kafka").options(**opts).schema(schema).load()


def rows_of(spark, opts: dict, schema: str = CHANGES) -> list[tuple]:
    return [tuple(r) for r in load(spark, opts, schema).collect()]


def stream(spark, opts: dict, schema: str = CHANGES):
    return spark.readStream.format("upsert-kafka").options(**opts).schema(schema).load()


def start_collecting(df, checkpoint: str, sink: Collector):
    """Start a stream into `sink` with a short processing-time trigger; the caller stops the query."""
    return (
        df.writeStream.foreachBatch(sink)
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime="200 milliseconds")
        .start()
    )


def run_available_now(df, checkpoint: str) -> Collector:
    """Run a stream with Trigger.AvailableNow into a Collector; fail if the query failed."""
    sink = Collector()
    query = (
        df.writeStream.foreachBatch(sink).option("checkpointLocation", checkpoint).trigger(availableNow=True).start()
    )
    try:
        query.awaitTermination(120)
        assert query.exception() is None, query.exception()
        assert not query.isActive, "an availableNow query must stop by itself"
    finally:
        query.stop()
    return sink


def recent_minute() -> int:
    """Epoch ms of a whole minute an hour ago: record timestamps in the past, yet within retention."""
    return (int(time.time()) // 60 - 60) * 60_000
