"""Shared helpers of the writer tests (tests/write/): writes in row order, and reading back what
Kafka holds, record by record or as the connector's table."""

from __future__ import annotations

import contextlib
import re
import time
from collections import Counter
from collections.abc import Iterator

import orjson
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.support.kafka_io import consume_all


def write(spark, opts: dict, rows: list[tuple], schema: str, mode: str = "append") -> None:
    """Write rows in their order: one Spark partition, since Spark keeps no order across tasks."""
    spark.createDataFrame(rows, schema).coalesce(1).write.format("upsert-kafka").options(**opts).mode(mode).save()


def records(bootstrap: str, topic: str) -> list[tuple[dict, dict | None]]:
    """Every record (read_committed) as (key, value) JSON objects, in partition and offset order."""
    return [(orjson.loads(k), v and orjson.loads(v)) for _, _, k, v in consume_all(bootstrap, topic)]


def key_counts(bootstrap: str, topic: str) -> Counter:
    """How many committed records each key has, by its `id`."""
    return Counter(orjson.loads(k)["id"] for _, _, k, _ in consume_all(bootstrap, topic))


def table(spark, opts: dict, schema: str) -> list[tuple]:
    """The topic as the connector's batch read sees it: the latest value per key, sorted."""
    rows = spark.read.format("upsert-kafka").options(**opts).schema(schema).load().collect()
    return sorted(tuple(r) for r in rows)


# A group coordinator not ready yet (a fresh broker creates __consumer_offsets on first use).
_COORDINATOR_NOT_READY = (
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    # A read_committed look-up waits for a transaction still committing offsets to the group (KIP-447), which
    # on a loaded machine can outlast one request: asked again within the caller's deadline.
    KafkaError._TIMED_OUT,
)


def task_markers(
    bootstrap: str, prefix: str, topic: str, timeout: float = 30, task: int | None = None
) -> dict[str, str | None]:
    """The exactly-once marker groups of transactional-id prefix `prefix` (each named like its task's transactional
    id, `<prefix>-<scope>-<task>`: pyspark_upsert_kafka.write.exactly_once), only task `task`'s when given, and
    the metadata each committed on partition 0 of `topic`. Another task's group is never asked: a read_committed
    look-up waits while that task's transaction is open (a pooled producer re-sends its marker at begin)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    tasks = r"\d+" if task is None else str(task)
    pattern = re.compile(re.escape(prefix) + r"-[a-z0-9]+-" + tasks)
    groups = sorted(g.group_id for g in admin.list_consumer_groups(request_timeout=10).result().valid)
    return {g: _committed_metadata(bootstrap, g, topic, timeout) for g in groups if pattern.fullmatch(g)}


def task_marker(bootstrap: str, prefix: str, task: int, topic: str) -> str | None:
    """The markers task `task` committed on `topic` (of every scope found, one per line), or None."""
    found = [m for m in task_markers(bootstrap, prefix, topic, task=task).values() if m]
    return "\n".join(found) or None


def _committed_metadata(bootstrap: str, group: str, topic: str, timeout: float) -> str | None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "isolation.level": "read_committed"})
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                (committed,) = consumer.committed([TopicPartition(topic, 0)], timeout=10)
                return committed.metadata or None
            except KafkaException as e:
                if e.args[0].code() not in _COORDINATOR_NOT_READY or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
    finally:
        consumer.close()


@contextlib.contextmanager
def arrow_batch_rows(spark, rows: int) -> Iterator[None]:
    """Smaller Arrow batches between Spark and the Python writer: a task's first records reach Kafka after
    `rows` rows instead of 10,000, so a fault mid-task finds them in its transaction. A streaming query
    takes the setting when it starts (pyspark 4.0's streaming writer keeps 10,000)."""
    key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    before = spark.conf.get(key)
    spark.conf.set(key, str(rows))
    try:
        yield
    finally:
        spark.conf.set(key, before)
