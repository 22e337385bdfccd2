"""Shared helpers of the reader tests (tests/read/): records with chosen partitions and
timestamps, batch and streaming reads, and a foreachBatch collector."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from pathlib import Path

import orjson
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient
from pyspark.sql.types import StructType
from pyspark_upsert_kafka import UpsertKafkaDataSource
from pyspark_upsert_kafka.options.ddl import parse_ddl
from pyspark_upsert_kafka.read.spec import ReadSpec, parse_read_spec

from tests.support.kafka_io import produce as send  # the read tests' name for the one producer
from tests.support.write_helpers import task_marker

__all__ = [
    "Collector",
    "as_checkpointed",
    "batch_reader",
    "delete_before",
    "fail_tasks",
    "finish_available_now",
    "load",
    "read_spec",
    "rec",
    "recent_minute",
    "rows_of",
    "run_available_now",
    "schema_of",
    "send",
    "stream",
    "stream_reader",
    "wait_for",
]

CHANGES = "id INT, name STRING, _change_type STRING"


class Collector:
    """A foreachBatch sink keeping the rows of each micro-batch by its id. Spark replays a batch that ran but
    was not committed (a query stopped right after foreachBatch) under the same id and offsets, so an
    idempotent sink stores each id once, as here: the rows seen are then exactly what the source delivered."""

    def __init__(self) -> None:
        self.by_batch: dict[int, list[tuple]] = {}

    def __call__(self, df, batch_id: int) -> None:
        self.by_batch[batch_id] = [tuple(r) for r in df.collect()]

    @property
    def batches(self) -> list[int]:
        return sorted(self.by_batch)

    @property
    def rows(self) -> list[tuple]:
        return [row for batch in self.batches for row in self.by_batch[batch]]


def wait_for(condition, what: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def rec(i: int, name: str | None = "v", partition: int | None = None, ts: int | None = None) -> tuple:
    """A JSON record of key {"id": i}; name=None makes it a tombstone."""
    value = None if name is None else orjson.dumps({"id": i, "name": name})
    return (orjson.dumps({"id": i}), value, partition, ts)


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


def collect_until(df, checkpoint: str, rows: int, timeout: float = 180) -> list[tuple]:
    """Run a stream on start_collecting's processing-time trigger until `rows` rows came and the micro-batch that
    gave the last of them is committed (a batch stopped before its commit runs again when the query restarts from
    `checkpoint`, and its rows would come twice), then stop it. For queries that never run dry under availableNow
    (state TTL, event-time timers)."""
    sink = Collector()
    query = start_collecting(df, str(checkpoint), sink)

    def committed() -> bool:
        progress = query.lastProgress
        return len(sink.rows) >= rows and progress is not None and progress["batchId"] >= max(sink.batches)

    try:
        wait_for(lambda: committed() or query.exception(), f"{rows} rows", timeout)
        assert query.exception() is None, query.exception()
    finally:
        query.stop()
    return sink.rows


def run_available_now(df, checkpoint: str) -> Collector:
    """Run a stream with Trigger.AvailableNow into a Collector; fail if the query failed."""
    sink = Collector()
    finish_available_now(
        df.writeStream.foreachBatch(sink).option("checkpointLocation", checkpoint).trigger(availableNow=True).start()
    )
    return sink


def finish_available_now(query, timeout_s: float = 120) -> None:
    """Wait for an AvailableNow query to stop by itself; fail if it failed or did not stop within `timeout_s`."""
    try:
        query.awaitTermination(timeout_s)
        assert query.exception() is None, query.exception()
        assert not query.isActive, f"an availableNow query must stop by itself (not within {timeout_s} s)"
    finally:
        query.stop()


def finish_reading(query, rows: int, timeout_s: float = 120) -> None:
    """Wait until a query on a processing-time trigger has read `rows` rows in micro-batches that completed (their
    progress is reported after their commit), then stop it; fail if it failed. Where pyspark (before 4.2) runs a
    capped Python source under AvailableNow as one micro-batch, this reads a topic one capped batch after another."""
    try:
        wait_for(
            lambda: query.exception() or sum(p["numInputRows"] for p in query.recentProgress) >= rows,
            f"{rows} rows read",
            timeout_s,
        )
        assert query.exception() is None, query.exception()
    finally:
        query.stop()


def recent_minute() -> int:
    """Epoch ms of a whole minute an hour ago: record timestamps in the past, yet within retention."""
    return (int(time.time()) // 60 - 60) * 60_000


def schema_of(ddl: str) -> StructType:
    """A DDL column list as Spark reads `.schema(...)`, by the connector's own parser: no JVM needed
    (tests/api/test_bad_schemas.py checks that it reads DDL as Spark does)."""
    return parse_ddl(ddl)


def _as_spark_passes(opts: dict) -> dict:
    # Spark hands a data source its options with keys in lower case.
    return {k.lower(): v for k, v in opts.items()}


def _source(opts: dict) -> UpsertKafkaDataSource:
    return UpsertKafkaDataSource(_as_spark_passes(opts))


def batch_reader(opts: dict, schema: str = CHANGES):
    """The connector's batch reader as Spark's driver builds it: to call partitions()/read() directly."""
    return _source(opts).reader(schema_of(schema))


def stream_reader(opts: dict, schema: str = CHANGES):
    """The connector's stream reader as Spark's driver builds it: to call initialOffset/latestOffset/partitions
    directly (a new reader for the same options is what a restarted query gets)."""
    return _source(opts).streamReader(schema_of(schema))


def read_spec(opts: dict, schema: str = CHANGES, *, streaming: bool = False) -> ReadSpec:
    """The read spec the connector parses from `opts` (keys in any case) for a `.schema(...)` DDL."""
    return parse_read_spec(_as_spark_passes(opts), schema_of(schema), streaming=streaming)


def as_checkpointed(offset: dict) -> dict:
    """An offset as Spark hands it back: the JSON text it stored, parsed again."""
    return json.loads(json.dumps(offset))


def delete_before(bootstrap: str, topic: str, offset: int, partition: int = 0) -> None:
    """Delete a partition's records below `offset`, as retention does."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    where = TopicPartition(topic, partition, offset)
    admin.delete_records([where])[where].result(30)


def fail_tasks(
    bootstrap: str, target: str, prefix: str, failing: Iterable[int], after: Iterable[int], flag: str, patience_s=60
):
    """A column function for `withColumn` (the value unchanged, as text): while the file `flag` exists, every
    attempt of the Spark tasks numbered in `failing` fails, once the exactly-once transactions of the tasks in
    `after` (transactional-id prefix `prefix`) have committed to `target`; so a query dies in the middle of a
    micro-batch, some of its tasks written and the others not. Spark starts tasks in order and a waiting task
    holds a core: let the failing tasks come after those they wait for."""
    from pyspark.sql import functions as F

    failing, after = frozenset(failing), tuple(after)

    def text(value: str) -> str:
        from pyspark import TaskContext

        task = TaskContext.get().partitionId()
        if task in failing and Path(flag).exists():
            deadline = time.monotonic() + patience_s
            while time.monotonic() < deadline and not all(task_marker(bootstrap, prefix, t, target) for t in after):
                time.sleep(0.2)
            raise RuntimeError(f"injected failure in task {task}")
        return value

    return F.udf(text, "string", useArrow=False).asNondeterministic()


def as_utc(wall_clock):
    """A TIMESTAMP_NTZ column read as a UTC wall clock, in any session time zone (a cast would read it in the
    session's zone)."""
    from pyspark.sql import functions as F

    return F.concat(wall_clock.cast("string"), F.lit("Z")).cast("timestamp")
