"""The Spark-facing writers: batch and streaming, both Arrow (on pyspark 4.0, whose stream writers are handed
rows, the stream writer turns them into Arrow batches first). The driver plans the write once (write.plan);
each task writes its rows through RecordWriter; the driver then commits (an overwrite tombstones the keys the
DataFrame lacks) or, after a failure, has exactly-once abort what the failed tasks left open."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import Row, StructType

from .. import spark_internals
from .plan import WritePlan, parse_write, resolve_write
from .task import RecordWriter, WriteResult
from .task_input import in_utc, rows_as_batches

log = logging.getLogger("upsert_kafka")


def _write_task(plan: WritePlan, batches: Iterator[pa.RecordBatch]) -> WriteResult:
    context = TaskContext.get()
    partition_id = context.partitionId() if context is not None else 0
    batches = in_utc(batches)
    if plan.spec.tables is not None:  # a multi-table write: table rows -> encoded records (write.multi_table)
        batches = plan.spec.tables.route(batches)
    return RecordWriter(plan, partition_id, spark_internals.task_micro_batch()).write(batches)


def _summary(messages: list[WriterCommitMessage | None]) -> str:
    results = [m for m in messages if isinstance(m, WriteResult)]
    records = sum(r.records for r in results)
    tombstones = sum(r.tombstones for r in results)
    replayed = sum(r.replayed for r in results)
    again = f", {replayed} task(s) already written by an earlier attempt" if replayed else ""
    return f"{records} record(s) ({tombstones} tombstone(s)) from {len(results)} task(s){again}"


def _abort(plan: WritePlan, messages: list[WriterCommitMessage | None]) -> None:
    """Exactly-once: abort at once what the failed tasks may have left open (without it: nothing to abort)."""
    scope = next((m.scope for m in messages if isinstance(m, WriteResult) and m.scope), None)
    plan.transactions.abort_failed(scope, [i for i, m in enumerate(messages) if m is None])


class UpsertKafkaWriter(DataSourceArrowWriter):
    def __init__(self, plan: WritePlan) -> None:
        self.plan = plan

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteResult:
        return _write_task(self.plan, iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        log.info("upsert-kafka: wrote %s to %s", _summary(messages), self.plan.spec.topics.describe())

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        _abort(self.plan, messages)


class UpsertKafkaStreamWriter(spark_internals.StreamWriter):
    """Spark makes one per micro-batch on the driver, in two processes: one is pickled into the batch's tasks
    (the write is planned then), the other commits or aborts the batch (planned only to abort)."""

    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        self.spec = parse_write(options, schema)
        self.topics = self.spec.topics
        self._location = options.get("checkpointlocation") or options.get("checkpointLocation")
        self._plan: WritePlan | None = None
        self.schema = schema  # of the rows pyspark 4.0 hands write()

    @property
    def plan(self) -> WritePlan:
        if self._plan is None:
            query_id = spark_internals.checkpoint_query_id(self._location)
            self._plan = resolve_write(self.spec, query_id=query_id, streaming=True)
        return self._plan

    def __getstate__(self) -> dict[str, object]:  # tasks get the plan
        return self.__dict__ | {"_plan": self.plan}

    def write(self, iterator: Iterator[pa.RecordBatch] | Iterator[Row]) -> WriteResult:
        if not spark_internals.STREAM_ARROW_WRITER:
            iterator = rows_as_batches(iterator, self.schema)
        return _write_task(self.plan, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        log.info("upsert-kafka: batch %d wrote %s to %s", batchId, _summary(messages), self.topics.describe())

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        _abort(self.plan, messages)
