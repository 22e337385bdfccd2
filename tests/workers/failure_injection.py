"""Failures injected into Spark tasks for the exactly-once tests: a Python UDF that, on a task's first
attempt, waits until the task's Kafka transaction holds records and then fails the task, as a crash in
the middle of a write would. Spark's Python workers import this module by name."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

# Rows reach the writer in bursts: the UDF worker's 64 KB output buffer, an Arrow batch
# (spark.sql.execution.arrow.maxRecordsPerBatch: ARROW_ROWS in these tests), the JVM's 64 KB buffer to the writer.
# With 1 KB rows all three pass within the first ~200 rows: past OPEN_AFTER, a task's writer has records in
# flight (with 100-character rows it took ~1,100).
TEXT_CHARS = 1000
OPEN_AFTER = 400
ARROW_ROWS = 100


def text(seq: int) -> str:
    """The bulky column value of a row, so rows stream on to the writer rather than wait in buffers."""
    return f"{seq:<{TEXT_CHARS}}"


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


def fail_first_attempt(
    bootstrap: str, topic: str, at_every: int, at: int, log_dir: str, patience_s: float = 10, chars: int = TEXT_CHARS
):
    """A column function for `withColumn`: a text of `chars` characters (`text(seq)`) for each row's `seq`, except
    that the first attempt of a task fails at the row whose `seq % at_every == at` (past OPEN_AFTER rows, with
    ARROW_ROWS Arrow batches: when the writer has records in flight), after waiting (at most patience_s) for its
    transaction to hold records. Each injected failure leaves a file in log_dir, named `open-...` when the
    transaction held records, else `empty-...`."""
    from pyspark.sql import functions as F

    def value(seq: int) -> str:
        from pyspark import TaskContext

        context = TaskContext.get()
        if context.attemptNumber() == 0 and seq % at_every == at:
            deadline = time.monotonic() + patience_s
            while not (is_open := open_transaction_has_records(bootstrap, topic)) and time.monotonic() < deadline:
                time.sleep(0.1)
            name = f"{'open' if is_open else 'empty'}-{context.partitionId()}-{uuid.uuid4().hex[:6]}"
            Path(log_dir, name).touch()
            raise RuntimeError(f"injected failure at row {seq}")
        return f"{seq:<{chars}}"

    return F.udf(value, "string", useArrow=False).asNondeterministic()
