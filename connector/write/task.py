"""Executor side: Arrow batches -> key/value encoders -> Kafka records (upserts and tombstones).

Per batch, with Arrow compute: change kinds classified (pre-images dropped, deletes marked), null keys
and per-row topics checked, keys encoded once. Then either straight to the producer, or through the
reducing buffer (write.buffer), which encodes values only for the last row of each key.
Records leave through write.producer, which applies the delivery guarantee.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import WriterCommitMessage

from ..errors import RecordError, WriteTaskError
from ..formats import ChangelogEncoder, Encoder
from ..formats.codec import Role
from ..spark_internals import MicroBatch, task_input_complete
from .buffer import FlushTimer, Pending, ReducingBuffer
from .change_kinds import classify
from .producer import Sender
from .spec import EXACTLY_ONCE, WriteSpec
from .target import WriteTarget
from .transactions import Fingerprint, identify, rows_of, transactional_id

log = logging.getLogger("upsert_kafka")


@dataclass(frozen=True)
class WritePlan:
    """A write as the driver planned it, pickled into every task."""

    spec: WriteSpec
    target: WriteTarget
    fresh_id: str  # this write's id, unless Spark runs it for a micro-batch (write.transactions)
    collect_keys: bool = False  # overwrite: tasks report every key they were given
    streaming: bool = False  # a stream write: exactly-once needs the task's micro-batch (write.transactions)


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


class RecordWriter:
    """Writes one Spark task's rows."""

    def __init__(self, plan: WritePlan, partition_id: int, batch: MicroBatch | None) -> None:
        spec, layout = plan.spec, plan.spec.layout
        self.plan, self.spec, self.layout = plan, spec, layout
        self.key_encoder = layout.key_codec.encoder(layout.key_schema)
        self.value_encoder = layout.value_codec.encoder(layout.value_schema)
        self.meta = {c.kind: c.column for c in layout.metadata}
        self.partition_id = partition_id
        self.identity = identify(spec, batch, plan.fresh_id, plan.streaming)
        exactly_once = spec.guarantee == EXACTLY_ONCE
        self.txn_id = transactional_id(spec, self.identity.scope, partition_id) if exactly_once else None
        self.fingerprint = Fingerprint()
        self.buffer = ReducingBuffer(spec.buffer.max_rows) if spec.buffer else None
        self.lock = threading.RLock()
        self.records = self.tombstones = self.skipped = self.reduced = 0
        self.keys: list[pa.Array] = []
        self.key_topics: list[pa.Array] = []

    def write(self, batches: Iterator[pa.RecordBatch]) -> WriteResult:
        # The producer first: a new one connects (and gets its producer id) while the first rows are read.
        sender = Sender(self.spec, self.plan.target, self.txn_id, self.identity.write_id)
        timer = None
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
                self._check_same_rows(committed)
                clean = True
                return self._result(replayed=True)
            if self.spec.buffer is not None:
                timer = FlushTimer(self.spec.buffer.interval_s, self.lock, lambda: self._flush_buffer(sender, timer))
                timer.start()
            for batch in batches:
                pending = self._pending(batch)
                if pending is not None:
                    self._send_or_buffer(sender, pending, timer)
            self._check_input_complete()
            if timer is not None:
                timer.stop()
                timer.check()
                self._flush_buffer(sender, timer)
            sender.finish(self.fingerprint)
            clean = True
        except BaseException:
            if timer is not None:
                timer.stop()
            sender.fail()  # a failed task sends nothing more; Spark runs it again whole
            raise
        finally:
            sender.release(clean)
        return self._result()

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
        if complete is None and self.txn_id is not None:
            # Fail closed: with exactly-once a partial commit would make every retry skip the rest.
            raise WriteTaskError(
                f"exactly-once write to {self.spec.topics.describe()}: cannot tell whether Spark handed this task "
                "its whole input (the PySpark worker's input stream was not found), so nothing of it is committed. "
                "Run the write in a PySpark 4.3 Python worker, or use sink.delivery-guarantee=at-least-once"
            )
        if complete is None:
            log.warning("upsert-kafka: cannot tell whether this task's input is complete (not in a PySpark worker)")

    def _check_same_rows(self, committed: str) -> None:
        """A replayed task skips what an earlier attempt committed: only right if it holds the same rows."""
        if str(self.fingerprint) != committed:
            raise WriteTaskError(
                f"exactly-once write to {self.spec.topics.describe()}: task {self.partition_id} of write "
                f"'{self.identity.write_id}' was committed by an earlier attempt with other rows ({rows_of(committed)} "
                f"then, {self.fingerprint.rows} now). The rows of this replayed write reach the Spark tasks "
                "differently than the first time, so writing them could duplicate rows and skipping could lose "
                "some; nothing of this attempt is written. Restart with what split the rows into tasks when the "
                "write first ran (e.g. options minPartitions / scan.split.max-records, a repartition(), "
                "spark.sql.shuffle.partitions), or write to a new topic"
            )

    def _result(self, replayed: bool = False) -> WriteResult:
        keys = pa.concat_arrays(self.keys) if self.keys else None
        topics = pa.concat_arrays(self.key_topics) if self.key_topics else None
        scope = self.identity.scope if self.txn_id is not None else None
        return WriteResult(self.records, self.tombstones, self.skipped, self.reduced, replayed, scope, keys, topics)

    # -- rows to pending records --------------------------------------------------------------------

    def _pending(self, batch: pa.RecordBatch) -> Pending | None:
        rows, deletes = self._classify(batch)
        if rows.num_rows == 0:
            return None
        self._check_keys(rows)
        topics = self._row_topics(rows)
        key_columns = rows.select(list(self.layout.key_fields)).rename_columns(list(self.layout.key_record_names))
        keys = self._encode(self.key_encoder, key_columns, rows, Role.KEY)
        if self.txn_id is not None:
            self.fingerprint.add(keys, pc.sum(deletes).as_py() or 0)
        if self.plan.collect_keys:
            self.keys.append(pa.array(keys, pa.binary()))
            if topics is not None:
                self.key_topics.append(pa.array(topics, pa.string()))
        return Pending(rows, deletes, keys, topics)

    def _classify(self, batch: pa.RecordBatch) -> tuple[pa.RecordBatch, pa.BooleanArray]:
        """Drop pre-images (a change-envelope format writes each as a delete, as Flink's do); return the rows to
        write and which of them are deletes."""
        where = lambda b, row: f"the row with key {self._key_text(b, row)}"  # noqa: E731
        envelopes = isinstance(self.value_encoder, ChangelogEncoder)
        rows, deletes, skipped = classify(batch, self.layout.changelog_column, where, envelopes)
        self.skipped += skipped
        return rows, deletes

    def _check_keys(self, rows: pa.RecordBatch) -> None:
        for name in self.layout.key_fields:
            nulls = rows.column(name).is_null()
            if pc.any(nulls).as_py():
                row = pc.index(nulls, True).as_py()
                raise RecordError(
                    f"key column '{name}' is null in the row with key {self._key_text(rows, row)}; an "
                    "upsert-kafka key must not be null (option 'key.fields')"
                )

    def _row_topics(self, rows: pa.RecordBatch) -> list[str] | None:
        """Each row's topic when the write has several; a row outside them fails the write."""
        topics = self.spec.topics
        column = self.spec.topic_column
        if column is None:
            return None
        values = rows.column(column).to_pylist()
        bad = sorted({t for t in set(values) if t is None or not topics.accepts(t)}, key=str)
        if bad:
            row = values.index(bad[0])
            raise RecordError(
                f"the row with key {self._key_text(rows, row)} names topic {bad[0]!r} in column "
                f"'{column}', which is not among the {topics.describe()} this write may write (option "
                f"'{'topic-pattern' if topics.pattern else 'topic'}')"
            )
        return values

    def _encode(
        self,
        encoder: Encoder,
        part: pa.RecordBatch,
        rows: pa.RecordBatch,
        role: Role,
        deletes: pa.BooleanArray | None = None,
    ) -> list[bytes]:
        """Encode `part` (the key or value columns of `rows`); with `deletes`, as change envelopes."""

        def encode(batch: pa.RecordBatch, flags: pa.BooleanArray | None) -> list[bytes]:
            return encoder.encode(batch) if flags is None else encoder.encode_changes(batch, flags)  # type: ignore[attr-defined]

        try:
            return encode(part, deletes)
        except (ValueError, TypeError, OverflowError) as batch_error:
            # Find the row to name it; only on this error path is encoding done row by row.
            for i in range(part.num_rows):
                try:
                    encode(part.slice(i, 1), None if deletes is None else deletes.slice(i, 1))
                except (ValueError, TypeError, OverflowError) as e:
                    raise RecordError(
                        f"cannot encode the {role} of the row with key {self._key_text(rows, i)} for "
                        f"{self.spec.topics.describe()} with format '{self._format(role)}': {e}"
                    ) from None
            raise RecordError(f"cannot encode a {role} for {self.spec.topics.describe()}: {batch_error}") from None

    def _format(self, role: Role) -> str:
        return (self.layout.key_codec if role is Role.KEY else self.layout.value_codec).name

    def _key_text(self, batch: pa.RecordBatch, row: int) -> str:
        return str({name: batch.column(name)[row].as_py() for name in self.layout.key_fields})

    # -- pending records to Kafka -------------------------------------------------------------------

    def _send_or_buffer(self, sender: Sender, pending: Pending, timer: FlushTimer | None) -> None:
        if self.buffer is None:
            self._send(sender, pending)
            return
        with self.lock:
            timer.check()  # type: ignore[union-attr]
            before = self.buffer.rows
            for full in self.buffer.add(pending):
                self.reduced += before + len(pending) - self.buffer.rows - len(full)
                before = self.buffer.rows + len(pending)  # what remains counts from here
                self._send(sender, full)
                sender.flush()
                timer.flushed()  # type: ignore[union-attr]

    def _flush_buffer(self, sender: Sender, timer: FlushTimer | None) -> None:
        """Send the last row of every buffered key and wait until Kafka has them all."""
        with self.lock:
            buffered = self.buffer.rows  # type: ignore[union-attr]
            reduced = self.buffer.drain()  # type: ignore[union-attr]
            if reduced is not None:
                self.reduced += buffered - len(reduced)
                self._send(sender, reduced)
                sender.flush()
            if timer is not None:
                timer.flushed()

    def _send(self, sender: Sender, pending: Pending) -> None:
        values = self._values(pending)
        rows = pending.rows
        sender.produce(
            pending.topics if pending.topics is not None else self.spec.topics.names[0],
            pending.keys,
            values,
            self._timestamps(rows),
            self._headers(rows),
        )
        self.records += len(values)
        self.tombstones += values.count(None)

    def _values(self, pending: Pending) -> list[bytes | None]:
        rows, deletes = pending.rows, pending.deletes
        columns = list(self.layout.value_fields)
        if isinstance(self.value_encoder, ChangelogEncoder):  # a delete is an envelope too, not a tombstone
            return self._encode(self.value_encoder, rows.select(columns), rows, Role.VALUE, deletes)  # type: ignore[return-value]
        if not pc.any(deletes).as_py():
            return self._encode(self.value_encoder, rows.select(columns), rows, Role.VALUE)
        upserts = rows.filter(pc.invert(deletes))
        encoded = iter(self._encode(self.value_encoder, upserts.select(columns), upserts, Role.VALUE))
        return [None if d else next(encoded) for d in deletes.to_pylist()]

    def _headers(self, rows: pa.RecordBatch) -> list[list[tuple[str, bytes | None]] | None] | None:
        """Each row's record headers, as the producer takes them: from the `headers` map, or from the
        `header-list` column in its order, a key that repeats sent each time (null: no headers)."""
        if "headers" in self.meta:
            return rows.column(self.meta["headers"]).to_pylist()  # a map: (key, value) pairs already
        column = self.meta.get("header-list")
        if column is None:
            return None
        lists = rows.column(column)
        entries = lists.flatten()  # the entries of the rows that have a list, in row order
        keys = entries.field("key")
        if entries.null_count or keys.null_count:
            for i, row in enumerate(lists.to_pylist()):
                if any(e is None or e["key"] is None for e in row or ()):
                    raise RecordError(
                        f"column '{column}' (header-list) has a header without a key in the row with key "
                        f"{self._key_text(rows, i)}: every header needs a key; its value may be null"
                    )
        pairs = iter(zip(keys.to_pylist(), entries.field("value").to_pylist()))
        lengths = pc.fill_null(pc.list_value_length(lists), 0).to_pylist()
        nulls = lists.is_null().to_pylist()
        return [None if null else list(itertools.islice(pairs, n)) for n, null in zip(lengths, nulls)]

    def _timestamps(self, rows: pa.RecordBatch) -> list[int] | None:
        """The `timestamp` metadata column as epoch ms; a null one is 0, which Kafka's client reads as now."""
        column = self.meta.get("timestamp")
        if column is None:
            return None
        millis = pc.cast(rows.column(column), pa.timestamp("ms", tz="UTC"), safe=False).cast(pa.int64())
        return pc.fill_null(millis, 0).to_pylist()
