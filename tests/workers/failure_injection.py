"""Failures injected into Spark tasks for the exactly-once tests: a Python UDF that, on a task's first
attempt, waits until the task's Kafka transaction holds records and then fails the task, as a crash in
the middle of a write would. Spark's Python workers import this module by name."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient


def open_transaction_has_records(bootstrap: str, topic: str) -> bool:
    """True when some partition of `topic` holds records not yet committed or aborted: its end offset (all
    records) is beyond its last stable offset (what read_committed readers may see)."""
    partitions = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10).topics[topic].partitions
    ends = {}
    for isolation in ("read_uncommitted", "read_committed"):
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "tests", "isolation.level": isolation})
        try:
            ends[isolation] = [consumer.get_watermark_offsets(TopicPartition(topic, p), 10)[1] for p in partitions]
        finally:
            consumer.close()
    return any(end > stable for end, stable in zip(ends["read_uncommitted"], ends["read_committed"]))


def fail_first_attempt(bootstrap: str, topic: str, at_every: int, at: int, log_dir: str, patience_s: float = 10):
    """A column function for `withColumn`: a 100-character text for each row's `seq` (bulky, so rows stream on
    to the writer rather than wait in buffers), except that the first attempt of a task fails at the row whose
    `seq % at_every == at`, after waiting (at most patience_s) for its transaction to hold records. Each
    injected failure leaves a file in log_dir, named `open-...` when the transaction held records, else
    `empty-...`."""
    from pyspark.sql import functions as F

    def text(seq: int) -> str:
        from pyspark import TaskContext

        context = TaskContext.get()
        if context.attemptNumber() == 0 and seq % at_every == at:
            deadline = time.monotonic() + patience_s
            while not (is_open := open_transaction_has_records(bootstrap, topic)) and time.monotonic() < deadline:
                time.sleep(0.1)
            name = f"{'open' if is_open else 'empty'}-{context.partitionId()}-{uuid.uuid4().hex[:6]}"
            Path(log_dir, name).touch()
            raise RuntimeError(f"injected failure at row {seq}")
        return f"{seq:<100}"

    return F.udf(text, "string", useArrow=False).asNondeterministic()
