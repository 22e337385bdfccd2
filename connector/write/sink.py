"""The Spark-facing writers: batch and streaming, both Arrow (on pyspark 4.0, whose stream writers are handed
rows, the stream writer turns them into Arrow batches first). The driver plans the write once (options, the
brokers' answers); each task writes its rows through RecordWriter; the driver then commits (an overwrite
tombstones the keys the DataFrame lacks) or, after a failure, fences open transactions."""

from __future__ import annotations

import itertools
import logging
import uuid
from collections.abc import Iterator
from functools import partial

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import Row, StructType

from .. import spark_internals
from ..client_pool import CLIENT_POOL
from ..errors import OptionError
from ..formats import ChangelogCodec
from ..options.canonical import canonical_options
from ..options.layout import check_codecs
from ..options.topics import parse_topic_selection
from .producer import fence, fence_scope
from .spec import EXACTLY_ONCE, parse_write_spec
from .target import describe_write_target
from .task import RecordWriter, WritePlan, WriteResult
from .transactions import identify

log = logging.getLogger("upsert_kafka")


def plan_write(
    options: dict, schema: StructType, overwrite: bool, query_id: str | None = None, streaming: bool = False
) -> WritePlan:
    """Parse the options and ask the brokers, once on the driver before any task starts. `query_id`: the
    streaming query's, when the driver can tell it (write.transactions names its transactional ids).

    streaming: Spark plans a stream write again for every micro-batch, in a driver-side Python worker it keeps
    for the query. There the brokers' answers are reused for a while, and a query's transactional ids are
    fenced once, when this process first plans it: fencing them at every micro-batch would fence the
    producers the tasks keep in their workers' pools (each task's own producer fences its id anyway)."""
    spec = parse_write_spec(options, schema)
    if overwrite and spec.topics.pattern is not None:
        raise OptionError(
            "save mode overwrite with option 'topic-pattern' would tombstone the keys of every topic the pattern "
            "matches, now or later: list the topics with option 'topic' (the DataFrame's rows name theirs in the "
            "topic column)"
        )
    if overwrite and isinstance(spec.layout.value_codec, ChangelogCodec):
        raise OptionError(
            f"save mode overwrite deletes the keys the DataFrame lacks with tombstones, which a "
            f"'{spec.layout.value_codec.name}' reader skips: write with mode append and `delete` rows for the keys "
            "to remove"
        )
    if overwrite and spec.tables is not None:
        raise OptionError("save mode overwrite does not apply to a multi-table write: write with mode append")
    check_codecs(spec.layout, writing=True)  # before any task; may ask the schema registry
    # 0: no transactions; None: exactly-once with the default transaction timeout.
    timeout = spec.transaction_timeout_ms if spec.guarantee == EXACTLY_ONCE else 0
    describe = partial(describe_write_target, spec.kafka, spec.topics.names, spec.topics.pattern, timeout)
    # A stream's write target (topics, limits) is asked again after a minute.
    target = (
        CLIENT_POOL.shared(("write-target", spec.kafka, spec.topics, timeout), describe, 60.0)
        if streaming
        else describe()
    )
    plan = WritePlan(spec, target, uuid.uuid4().hex, collect_keys=overwrite, streaming=streaming)
    if spec.guarantee == EXACTLY_ONCE and (spec.write_id is not None or query_id is not None):
        # A rerun of a named write or a restarted query: abort at once what a crashed run left open.
        batch = spark_internals.MicroBatch(query_id, "0") if query_id is not None else None
        scope = identify(spec, batch, plan.fresh_id).scope
        fence_open = partial(fence_scope, spec, target, scope)
        if streaming:  # once per query and process: later micro-batches find it done
            CLIENT_POOL.shared(("fenced", spec.transactional_id_prefix, scope), lambda: fence_open() or True)
        else:
            fence_open()
    return plan


def _write_task(plan: WritePlan, batches: Iterator[pa.RecordBatch]) -> WriteResult:
    context = TaskContext.get()
    partition_id = context.partitionId() if context is not None else 0
    if plan.spec.tables is not None:  # a multi-table write: table rows -> encoded records (write.multi_table)
        batches = plan.spec.tables.route(batches)
    return RecordWriter(plan, partition_id, spark_internals.task_micro_batch()).write(batches)


# Rows per Arrow batch when a stream writer is handed rows (pyspark 4.0).
_ROWS_PER_BATCH = 10_000


def rows_as_batches(rows: Iterator[Row], schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """pyspark 4.0 hands a stream writer Rows, not Arrow batches: the same batches, built from the rows (Python
    per row: the price of 4.0, which has no Arrow stream writer)."""
    while chunk := list(itertools.islice(rows, _ROWS_PER_BATCH)):
        columns = zip(*chunk)
        yield pa.RecordBatch.from_arrays([pa.array(c, f.type) for c, f in zip(columns, schema)], schema=schema)


def _summary(messages: list[WriterCommitMessage | None]) -> str:
    results = [m for m in messages if isinstance(m, WriteResult)]
    records = sum(r.records for r in results)
    tombstones = sum(r.tombstones for r in results)
    replayed = sum(r.replayed for r in results)
    again = f", {replayed} task(s) already written by an earlier attempt" if replayed else ""
    return f"{records} record(s) ({tombstones} tombstone(s)) from {len(results)} task(s){again}"


def _abort(plan: WritePlan, messages: list[WriterCommitMessage | None]) -> None:
    """Exactly-once: abort at once what failed tasks may have left open (read_committed readers of
    those partitions would otherwise wait for the transaction timeout). The ids' scope is known from the
    tasks that succeeded; when none did, the transaction timeout ends what is left open."""
    if plan.spec.guarantee != EXACTLY_ONCE:
        return
    scope = next((m.scope for m in messages if isinstance(m, WriteResult) and m.scope), None)
    if scope is None:
        log.info("upsert-kafka: no task of the failed write succeeded; open transactions end by their timeout")
        return
    fence(plan.spec, plan.target, scope, [i for i, m in enumerate(messages) if m is None])


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
        self._options, self._schema = options, schema
        self._plan: WritePlan | None = None
        self.topics = parse_topic_selection(canonical_options(options))
        self.arrow_schema = spark_internals.to_arrow_schema(schema)  # of the rows pyspark 4.0 hands write()

    @property
    def plan(self) -> WritePlan:
        if self._plan is None:
            location = self._options.get("checkpointlocation") or self._options.get("checkpointLocation")
            query_id = spark_internals.checkpoint_query_id(location)
            self._plan = plan_write(self._options, self._schema, overwrite=False, query_id=query_id, streaming=True)
        return self._plan

    def __getstate__(self) -> dict:  # tasks get the plan
        return {
            "_options": None,
            "_schema": None,
            "_plan": self.plan,
            "topics": self.topics,
            "arrow_schema": self.arrow_schema,
        }

    def write(self, iterator: Iterator[pa.RecordBatch] | Iterator[Row]) -> WriteResult:
        if not spark_internals.STREAM_ARROW_WRITER:
            iterator = rows_as_batches(iterator, self.arrow_schema)
        return _write_task(self.plan, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        log.info("upsert-kafka: batch %d wrote %s to %s", batchId, _summary(messages), self.topics.describe())

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        _abort(self.plan, messages)
