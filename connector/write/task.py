"""Executor side: one write task, Arrow batches -> Kafka records (upserts and tombstones).

The task's rows become Pending rows with encoded keys (write.encode), go through the reducing buffer when
`sink.buffer-flush.*` asks for it (write.buffer, a decorator of the output), then get their values encoded
and leave through the task's producer (write.producer), which applies the delivery guarantee. With
exactly-once the task's ExactlyOnceTask (write.exactly_once) fingerprints the rows and tells a replay; without it,
its NoTransactionTask does nothing in their place.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import WriterCommitMessage

from ..errors import WriteTaskError
from ..spark_internals import MicroBatch, task_input_complete
from .buffer import Output, Pending, ReducingOutput
from .encode import RecordEncoder
from .plan import WritePlan
from .producer import Sender


@dataclass(frozen=True)
class WriteResult(WriterCommitMessage):
    records: int
    tombstones: int
    skipped_preimages: int
    reduced: int = 0  # rows the reducing buffer replaced by a later row of their key
    replayed: bool = False  # exactly-once: an earlier attempt had committed this task's records
    scope: str | None = None  # exactly-once: the scope of the task's transactional id (for fencing)
    keys: pa.Array | None = None  # overwrite: the encoded key of every row
    key_topics: pa.Array | None = None  # ... and its topic, when the write has several


class KafkaOutput:
    """Pending rows -> records (their values encoded now) -> the task's producer."""

    def __init__(self, encoder: RecordEncoder, sender: Sender) -> None:
        self.encoder, self.sender = encoder, sender
        self.records = self.tombstones = 0

    def send(self, pending: Pending) -> None:
        values = self.encoder.values(pending)
        rows = pending.rows
        topics = self.encoder.topics(pending)
        self.sender.produce(topics, pending.keys, values, self.encoder.timestamps(rows), self.encoder.headers(rows))
        self.records += len(values)
        self.tombstones += values.count(None)

    def flush(self) -> None:
        self.sender.flush()

    def stop(self) -> None:
        """Nothing runs on its own here (the producer is ended by the task)."""


class SeenKeys:
    """Save mode overwrite: every key the task was given (and its topic), for the driver to tombstone the rest."""

    def __init__(self) -> None:
        self.keys: list[pa.Array] = []
        self.topics: list[pa.Array] = []

    def add(self, pending: Pending) -> None:
        self.keys.append(pa.array(pending.keys, pa.binary()))
        if pending.topics is not None:
            self.topics.append(pa.array(pending.topics, pa.string()))

    def arrays(self) -> tuple[pa.Array | None, pa.Array | None]:
        return (
            pa.concat_arrays(self.keys) if self.keys else None,
            pa.concat_arrays(self.topics) if self.topics else None,
        )


class RecordWriter:
    """Writes one Spark task's rows."""

    def __init__(self, plan: WritePlan, partition_id: int, batch: MicroBatch | None) -> None:
        self.plan, self.spec = plan, plan.spec
        self.encoder = RecordEncoder(plan.spec)
        self.transactions = plan.transactions.task(partition_id, batch)
        self.seen = SeenKeys() if plan.collect_keys else None
        self.kafka: KafkaOutput | None = None
        self.output: Output | None = None

    def write(self, batches: Iterator[pa.RecordBatch]) -> WriteResult:
        # The producer first: a new one connects (and gets its producer id) while the first rows are read.
        sender = Sender(self.spec, self.plan.target, self.transactions)
        clean = False  # the producer goes back to the worker's pool only after a task without error
        try:
            first = next(batches, None)
            if first is None:  # no transaction for an empty task
                clean = True
                return self._result()
            batches = itertools.chain([first], batches)
            committed = sender.begin()
            if committed is not None:  # exactly-once: an earlier attempt committed this write
                for batch in batches:  # its rows are read to check they are the ones committed
                    self._pending(batch)
                self._check_input_complete()
                self.transactions.check_replay(committed)
                clean = True
                return self._result(replayed=True)
            self.kafka = self.output = KafkaOutput(self.encoder, sender)
            if (buffer := self.spec.buffer) is not None:
                self.output = ReducingOutput(self.kafka, buffer.max_rows, buffer.interval_s)
            for batch in batches:
                pending = self._pending(batch)
                if pending is not None:
                    self.output.send(pending)
            self._check_input_complete()
            self.output.stop()
            self.output.flush()
            sender.finish()
            clean = True
        except BaseException:
            if self.output is not None:
                self.output.stop()
            sender.fail()  # a failed task sends nothing more; Spark runs it again whole
            raise
        finally:
            sender.release(clean)
        return self._result()

    def _pending(self, batch: pa.RecordBatch) -> Pending | None:
        pending = self.encoder.pending(batch)
        if pending is None:
            return None
        self.transactions.count(pending.keys, pc.sum(pending.deletes).as_py() or 0)
        if self.seen is not None:
            self.seen.add(pending)
        return pending

    def _check_input_complete(self) -> None:
        """Commit nothing when Spark cut the input short (a failing step before the writer): the task fails
        anyway, and a commit of part of its rows would, with exactly-once, keep the retry from writing the
        rest."""
        complete = task_input_complete()
        if complete is False:
            raise WriteTaskError(
                f"the input of this write task to {self.spec.topics.describe()} ended early because the task is "
                "failing (see the error of the step before the write); nothing of it is committed"
            )
        if complete is None:  # exactly-once fails closed, a partial commit would make every retry skip the rest
            self.transactions.input_unknown()

    def _result(self, replayed: bool = False) -> WriteResult:
        keys, topics = self.seen.arrays() if self.seen is not None else (None, None)
        records, tombstones = (self.kafka.records, self.kafka.tombstones) if self.kafka is not None else (0, 0)
        return WriteResult(
            records,
            tombstones,
            self.encoder.skipped,
            self.output.reduced if isinstance(self.output, ReducingOutput) else 0,
            replayed,
            self.transactions.scope,
            keys,
            topics,
        )
