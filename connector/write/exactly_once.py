"""Exactly-once, in one place: one Kafka transaction per Spark task, and a marker that keeps a replay from writing
twice. `ExactlyOnce` is the write's (planned on the driver, pickled into its tasks): it names the write, fences
what earlier runs and failed tasks left open, and gives each task its `ExactlyOnceTask`, which the task's
producer (write.producer) opens its transaction with (write.transactions: the Kafka side of it).

Without exactly-once (sink.delivery-guarantee at-least-once or none) the write plans `NoTransactions` instead,
chosen once (write.plan): the same faces, `NoTransactionTask` and write.transactions' `NoTransaction`, each step
the at-least-once one or nothing, so that the task, its producer and the sink never ask which they have.

Identity. A task's transactional id is `<sink.transactional-id-prefix>-<scope>-<Spark partition id>`. The
scope names what a replay shares: the streaming query (its id survives restarts), a batch write's
`sink.write-id`, or else the one job. So every attempt and every micro-batch of a query reuse the same ids —
`init_transactions` fences an earlier attempt and aborts whatever it left open — while two queries or jobs
given the same prefix never fence each other or read each other's markers.

Markers. Kafka's transactions make a task's records visible all at once or never, but Spark may run a task
again after it committed (a retried stage, a micro-batch replayed after a restart). So each transaction also
commits a marker — the write id and a fingerprint of the task's rows, as the metadata of a consumer-group
offset in the group named like the transactional id — through `send_offsets_to_transaction`, atomically with
the records. An attempt that finds its write id there (read after `init_transactions`, so nothing is in
flight) was written already: it reads its rows only to check they are the ones committed, and writes nothing.

Why the fingerprint. Skipping is right only if the replayed task holds the rows that were committed under its
id. If the rows of a replayed write reach other tasks than the first time (partitioning options changed
before a restart, a non-deterministic shuffle), skipping would lose some rows and writing would duplicate
others: the attempt fails instead, with an error that says so. The fingerprint is a multiset digest of the
rows' encoded keys and change kinds, independent of row order (a shuffle may deliver rows in another order).

Write ids: a micro-batch's is its query id and batch id (Spark sets both as local properties of its tasks,
also for batch writes inside foreachBatch: spark_internals.task_micro_batch); a batch write's is its
`sink.write-id`, else a fresh id made on the driver. The target topics are part of it, so two writes of one
micro-batch to different topics do not mistake each other's markers.
"""

from __future__ import annotations

import hashlib
import logging
import re
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Producer

from ..errors import UpsertKafkaError, WriteTaskError
from ..kafka.brokers import Brokers
from ..kafka.clients import producer
from ..kafka.errors import ClientErrors, with_retries
from ..kafka.pool import CLIENT_POOL, Pooled
from ..spark_internals import MicroBatch
from .spec import WriteSpec
from .target import DEFAULT_TRANSACTION_TIMEOUT_MS, WriteTarget
from .transactions import NoTransaction, TaskTransaction

log = logging.getLogger("upsert_kafka")

_MASK = (1 << 64) - 1


def _digest(text: str, length: int) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:length]


@dataclass(frozen=True)
class WriteIdentity:
    """What the attempts and replays of one write share."""

    scope: str  # in every transactional id of the write
    write_id: str  # in the marker of every task that committed


class Fingerprint:
    """An order-independent digest of a task's rows: their count, deletes and two sums of per-key checksums.
    `zlib` over the encoded keys runs in C, one call per key (no Python code per row)."""

    def __init__(self) -> None:
        self.rows = self.deletes = self.crc = self.adler = 0

    def add(self, keys: list[bytes], deletes: int) -> None:
        self.rows += len(keys)
        self.deletes += deletes
        self.crc = (self.crc + sum(map(zlib.crc32, keys))) & _MASK
        self.adler = (self.adler + sum(map(zlib.adler32, keys))) & _MASK

    def __str__(self) -> str:
        return f"{self.rows}:{self.deletes}:{self.crc:x}:{self.adler:x}"


def rows_of(fingerprint: str) -> str:
    return fingerprint.split(":", 1)[0]


@dataclass(frozen=True)
class ExactlyOnce:
    """An exactly-once write, as the driver planned it: its identity and every transactional id it may use."""

    spec: WriteSpec
    target: WriteTarget
    fresh_id: str  # the job's id, unless the write is named (sink.write-id) or runs for a micro-batch
    streaming: bool = False  # a stream write: each task needs its micro-batch

    def identity(self, batch: MicroBatch | None) -> WriteIdentity:
        """A named batch write's, else the micro-batch's when there is one, else the job's.

        A stream write fails closed without its micro-batch (spark_internals.task_micro_batch): a job's fresh id
        would make a replayed micro-batch look new, and it would be written a second time."""
        target = _digest(self.spec.topics.describe(), 12)
        if self.spec.write_id is not None:
            return WriteIdentity(f"w{_digest(self.spec.write_id, 10)}", f"write {self.spec.write_id} to {target}")
        if batch is not None:
            return WriteIdentity(
                f"q{_digest(batch.query_id, 10)}", f"query {batch.query_id} batch {batch.batch_id} to {target}"
            )
        if self.streaming:
            raise WriteTaskError(
                f"exactly-once stream write to {self.spec.topics.describe()}: this pyspark does not tell the task "
                "which streaming query and micro-batch it runs for (local properties 'sql.streaming.queryId' and "
                "'streaming.sql.batchId'), without which a replayed micro-batch would be written twice; nothing is "
                "written. Use a supported pyspark (4.0 to 4.3) or sink.delivery-guarantee 'at-least-once'"
            )
        return WriteIdentity(f"j{self.fresh_id[:10]}", f"write {self.fresh_id} to {target}")

    def transactional_id(self, scope: str, partition_id: int) -> str:
        return f"{self.spec.transactional_id_prefix}-{scope}-{partition_id}"

    def settings(self, transactional_id: str) -> dict[str, Any]:
        """The producer settings a transaction owns (the user's properties cannot change them)."""
        timeout = self.target.transaction_timeout_ms or DEFAULT_TRANSACTION_TIMEOUT_MS
        return {
            "transactional.id": transactional_id,
            "transaction.timeout.ms": timeout,
            "message.timeout.ms": min(120_000, timeout),  # librdkafka requires it within the transaction's
        }

    def task(self, partition_id: int, batch: MicroBatch | None) -> ExactlyOnceTask:
        identity = self.identity(batch)
        return ExactlyOnceTask(self, self.transactional_id(identity.scope, partition_id), identity, partition_id)

    # -- driver side ----------------------------------------------------------------------------------

    def fence_earlier_runs(self, query_id: str | None) -> None:
        """Before a rerun of a named write or a restarted query: abort at once what a crashed run left open.

        A stream write is planned again for every micro-batch in the driver-side Python worker Spark keeps for
        the query: its ids are fenced once per process, when it first plans the query (fencing them at every
        micro-batch would fence the producers the tasks keep in their workers' pools)."""
        if self.spec.write_id is None and query_id is None:
            return  # a job's fresh ids: nothing ran under them before
        scope = self.identity(MicroBatch(query_id, "0") if query_id is not None else None).scope
        if self.streaming:
            key = ("fenced", self.spec.transactional_id_prefix, scope)

            def fence() -> bool:  # the value kept: that this process fenced the scope
                self._fence_scope(scope)
                return True

            CLIENT_POOL.shared(key, fence)
        else:
            self._fence_scope(scope)

    def abort_failed(self, scope: str | None, partition_ids: list[int]) -> None:
        """After a failed write: abort what its failed tasks may have left open (read_committed readers of those
        partitions would otherwise wait for the transaction timeout). The ids' scope is known from the tasks
        that succeeded; when none did, the transaction timeout ends what is left open."""
        if scope is None:
            log.info("upsert-kafka: no task of the failed write succeeded; open transactions end by their timeout")
            return
        for partition_id in partition_ids:
            self._fence(self.transactional_id(scope, partition_id))

    def _fence(self, transactional_id: str) -> None:
        """Initializing a producer with a transactional id aborts what the id left open."""
        errors = ClientErrors()
        client = producer(self.spec.kafka, _ignore, {}, errors, **self.settings(transactional_id))
        try:
            what = f"fence transactional id '{transactional_id}'"
            with_retries(self.spec.kafka, what, client.init_transactions, errors=errors)
        except UpsertKafkaError as e:
            log.warning("upsert-kafka: could not abort open transactions of %s: %s", transactional_id, e)

    def _fence_scope(self, scope: str) -> None:
        """Fence every transactional id of `scope` that ever committed (their marker groups exist), whatever the
        task count now. An id that never committed is ended by the transaction timeout if no task of this run
        takes it over first."""
        pattern = re.compile(re.escape(f"{self.spec.transactional_id_prefix}-{scope}-") + r"(\d+)")
        try:
            groups = Brokers(self.spec.kafka).consumer_groups()
        except UpsertKafkaError as e:
            log.warning("upsert-kafka: could not list the exactly-once marker groups: %s", e)
            return
        ids = sorted(int(m.group(1)) for g in groups if (m := pattern.fullmatch(g)))
        if ids:
            log.info("upsert-kafka: fencing %d transactional id(s) of %s", len(ids), self.transactional_id(scope, 0))
            with ThreadPoolExecutor(max_workers=min(8, len(ids))) as pool:
                list(pool.map(lambda i: self._fence(self.transactional_id(scope, i)), ids))


@dataclass
class ExactlyOnceTask:
    """One task's part of an exactly-once write: its transactional id, the write id its marker names and the
    fingerprint of the rows it was given."""

    write: ExactlyOnce
    transactional_id: str
    identity: WriteIdentity
    partition_id: int
    fingerprint: Fingerprint = field(default_factory=Fingerprint)

    def settings(self) -> dict[str, Any]:
        return self.write.settings(self.transactional_id)

    @property
    def scope(self) -> str | None:
        """The scope of the task's transactional id, reported to the driver (which fences by it after a failure)."""
        return self.identity.scope

    def transaction(self, lent: Pooled[Producer]) -> TaskTransaction:
        """The task's transaction on the producer lent to it (write.producer asks again for a new producer)."""
        timeout_ms = self.settings()["transaction.timeout.ms"]
        return TaskTransaction(
            lent, self.write.spec, self.transactional_id, self.identity.write_id, timeout_ms, self.fingerprint
        )

    def count(self, keys: list[bytes], deletes: int) -> None:
        self.fingerprint.add(keys, deletes)

    def input_unknown(self) -> None:
        """Spark cannot tell whether it handed the task its whole input: fail closed, as a partial commit would make
        every retry skip the rest."""
        raise WriteTaskError(
            f"exactly-once write to {self.write.spec.topics.describe()}: cannot tell whether Spark handed this task "
            "its whole input (the PySpark worker's input stream was not found), so nothing of it is committed. "
            "Run the write in a PySpark 4.3 Python worker, or use sink.delivery-guarantee=at-least-once"
        )

    def check_replay(self, committed: str) -> None:
        """A replayed task skips what an earlier attempt committed: only right if it holds the same rows."""
        if str(self.fingerprint) != committed:
            raise WriteTaskError(
                f"exactly-once write to {self.write.spec.topics.describe()}: task {self.partition_id} of write "
                f"'{self.identity.write_id}' was committed by an earlier attempt with other rows "
                f"({rows_of(committed)} then, {self.fingerprint.rows} now). The rows of this replayed write reach the "
                "Spark tasks differently than the first time, so writing them could duplicate rows and skipping "
                "could lose some; nothing of this attempt is written. Restart with what split the rows into tasks "
                "when the write first ran (e.g. options minPartitions / scan.split.max-records, a repartition(), "
                "spark.sql.shuffle.partitions), or write to a new topic"
            )


def _ignore(error: Any, message: Any) -> None:
    """No records are sent by a fencing producer."""


class NoTransactionTask:
    """One task's part of a write without exactly-once: ExactlyOnceTask's face, each step nothing (or the warning
    where exactly-once would fail closed)."""

    scope: str | None = None  # no transactional id to fence

    def settings(self) -> dict[str, Any]:
        return {}

    def transaction(self, lent: Pooled[Producer]) -> NoTransaction:
        return NoTransaction(lent)

    def count(self, keys: list[bytes], deletes: int) -> None:
        """No fingerprint to keep."""

    def check_replay(self, committed: str) -> None:
        """Never asked: without a transaction no earlier attempt is found to have committed the task."""

    def input_unknown(self) -> None:
        log.warning("upsert-kafka: cannot tell whether this task's input is complete (not in a PySpark worker)")


NO_TRANSACTION_TASK = NoTransactionTask()


@dataclass(frozen=True)
class NoTransactions:
    """A write without exactly-once (sink.delivery-guarantee at-least-once or none), as the driver planned it:
    ExactlyOnce's face, with nothing to fence or abort."""

    def task(self, partition_id: int, batch: MicroBatch | None) -> NoTransactionTask:
        return NO_TRANSACTION_TASK

    def fence_earlier_runs(self, query_id: str | None) -> None:
        """No earlier run left a transaction open."""

    def abort_failed(self, scope: str | None, partition_ids: list[int]) -> None:
        """No failed task left a transaction open (what it had queued was dropped, what was acknowledged stays)."""


NO_TRANSACTIONS = NoTransactions()
