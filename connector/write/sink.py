"""The Spark-facing writers: batch and streaming, both Arrow (on pyspark 4.0, whose stream writers are handed
rows, the stream writer turns them into Arrow batches first). The driver plans the write once (write.plan);
each task writes its rows through RecordWriter; the driver then commits (an overwrite tombstones the keys the
DataFrame lacks) or, after a failure, has exactly-once abort what the failed tasks left open."""

from __future__ import annotations

import datetime as dt
import itertools
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import ArrayType, MapType, Row, StructType, TimestampType

from .. import spark_internals
from .plan import WritePlan, parse_write, resolve_write
from .task import RecordWriter, WriteResult

log = logging.getLogger("upsert_kafka")


def _write_task(plan: WritePlan, batches: Iterator[pa.RecordBatch]) -> WriteResult:
    context = TaskContext.get()
    partition_id = context.partitionId() if context is not None else 0
    batches = in_utc(batches)
    if plan.spec.tables is not None:  # a multi-table write: table rows -> encoded records (write.multi_table)
        batches = plan.spec.tables.route(batches)
    return RecordWriter(plan, partition_id, spark_internals.task_micro_batch()).write(batches)


# ---- Where the rows enter: every write task's batches, in the Arrow types the encoders were built for ----------


def in_utc(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Spark hands a writer Arrow batches whose timestamps carry the session's time zone (`timestamp[us,
    tz=America/New_York]`, or `Etc/UTC`), while the encoders were built for the UTC ones of
    spark_internals.to_arrow_schema: a zone in the type made csv write local times and Avro refuse the batch. The
    values are UTC microseconds either way, so only the type changes (a cast that keeps every value and buffer)."""
    given = target = None
    for batch in batches:
        if given is None or not batch.schema.equals(given):
            given = batch.schema
            target = pa.schema([f.with_type(_utc_type(f.type)) for f in given], metadata=given.metadata)
            target = None if target.equals(given) else target
        if target is None:
            yield batch
        else:
            columns = [c if c.type == f.type else c.cast(f.type) for c, f in zip(batch.columns, target)]
            yield pa.RecordBatch.from_arrays(columns, schema=target)


def _utc_type(t: pa.DataType) -> pa.DataType:
    """`t` with every timestamp that has a zone in UTC, nested ones included."""
    if pa.types.is_timestamp(t):
        return pa.timestamp(t.unit, tz="UTC") if t.tz is not None else t
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_utc_type(f.type)) for f in t])
    if pa.types.is_map(t):
        key, item = t.key_field, t.item_field
        return pa.map_(key.with_type(_utc_type(key.type)), item.with_type(_utc_type(item.type)), t.keys_sorted)
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_utc_type(t.value_type)))
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(_utc_type(t.value_type)))
    return t


# Rows per Arrow batch when a stream writer is handed rows (pyspark 4.0).
_ROWS_PER_BATCH = 10_000


def rows_as_batches(rows: Iterator[Row], schema: StructType) -> Iterator[pa.RecordBatch]:
    """pyspark 4.0 hands a stream writer Rows, not Arrow batches: the same batches, built from the rows (Python
    per row: the price of 4.0, which has no Arrow stream writer). A TIMESTAMP comes as the Python worker's local
    time without a zone (pyspark's `astimezone()`): read as local time again, not as UTC."""
    arrow = spark_internals.to_arrow_schema(schema)
    fixes = [_local_times(f.dataType) for f in schema.fields]
    while chunk := list(itertools.islice(rows, _ROWS_PER_BATCH)):
        columns = [c if fix is None else [fix(v) for v in c] for c, fix in zip(zip(*chunk), fixes)]
        yield pa.RecordBatch.from_arrays([pa.array(c, f.type) for c, f in zip(columns, arrow)], schema=arrow)


def _local_times(t: Any) -> Callable[[Any], Any] | None:
    """A function giving a value of Spark type `t` its TIMESTAMPs in UTC; None when `t` holds none."""
    if isinstance(t, TimestampType):
        return lambda v: None if v is None else v.astimezone(dt.timezone.utc)
    if isinstance(t, ArrayType):
        element = _local_times(t.elementType)
        return None if element is None else lambda v: None if v is None else [element(e) for e in v]
    if isinstance(t, MapType):
        key, value = _local_times(t.keyType) or _same, _local_times(t.valueType) or _same
        if key is _same and value is _same:
            return None
        return lambda v: None if v is None else {key(k): value(e) for k, e in v.items()}
    if isinstance(t, StructType):
        fields = [_local_times(f.dataType) or _same for f in t.fields]
        if all(f is _same for f in fields):
            return None
        return lambda v: None if v is None else tuple(f(e) for f, e in zip(fields, v))
    return None


def _same(v: Any) -> Any:
    return v


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

    def __init__(self, options: dict, schema: StructType) -> None:
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

    def __getstate__(self) -> dict:  # tasks get the plan
        return self.__dict__ | {"_plan": self.plan}

    def write(self, iterator: Iterator[pa.RecordBatch] | Iterator[Row]) -> WriteResult:
        if not spark_internals.STREAM_ARROW_WRITER:
            iterator = rows_as_batches(iterator, self.schema)
        return _write_task(self.plan, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        log.info("upsert-kafka: batch %d wrote %s to %s", batchId, _summary(messages), self.topics.describe())

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        _abort(self.plan, messages)
