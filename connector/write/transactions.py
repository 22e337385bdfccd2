"""The Kafka side of exactly-once (write.exactly_once): one task's transaction on its pooled producer, and the
marker committed with it (the write id and the fingerprint of the task's rows, as the metadata of a
consumer-group offset in the group named like the transactional id). A task without exactly-once has a
NoTransaction instead: the same steps, each the at-least-once one or nothing, so the producer never asks which."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from confluent_kafka import KafkaError, KafkaException, Producer, TopicPartition

from ..kafka.clients import borrow_group_consumer, give_back
from ..kafka.errors import ClientErrors, is_transient, with_retries, within
from ..kafka.pool import Pooled
from ..kernel.clock import SYSTEM_CLOCK, Clock
from .spec import WriteSpec

log = logging.getLogger("upsert_kafka")

T = TypeVar("T")


class StaleProducer(Exception):
    """A pooled transactional producer that another producer of its id has fenced since its last use."""


class TaskTransaction:
    """The transaction of one task on `producer`, lent from the pool with its transactional id (kafka/pool.py).

    A producer new to the pool starts with `init_transactions`, which fences earlier producers of the id and
    aborts what they left open (its pool entry remembers it). A pooled one ended its last transaction cleanly,
    but another producer of the id (the task run in another worker meanwhile) may have fenced it since. So
    before any record is sent, it commits the current marker again inside its new transaction, a request the
    brokers refuse from a fenced producer: refused, begin() raises StaleProducer, and the task goes on with a
    new producer."""

    def __init__(
        self,
        producer: Pooled[Producer],
        spec: WriteSpec,
        transactional_id: str,
        write_id: str,
        transaction_timeout_ms: int,
        fingerprint: object,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.client, self.errors, self.memo = producer.client, producer.errors, producer.memo
        self.spec, self.id, self.write_id = spec, transactional_id, write_id
        self.fingerprint = fingerprint  # the task's rows (exactly_once.Fingerprint), counted as they go out
        self.timeout_s = spec.kafka.timeout_s
        self.transaction_timeout_ms = transaction_timeout_ms
        self.clock = clock  # how long the transaction was open, for a timeout's hint
        self.started: float | None = None  # on `clock`
        # The marker group's consumer reports its own errors (an ACL on the group): served by polling it, which
        # consumes nothing (it has no assignment).
        self._group = borrow_group_consumer(spec.kafka, transactional_id)
        self._group.errors.serve = self._serve_group

    def begin(self) -> str | None:
        """Fence earlier attempts. When one of them committed this write already, return the fingerprint it
        committed (and open no transaction); else open the transaction and return None."""
        initialized = self.memo.get("transactions")  # by an earlier borrower, whose transaction committed
        if not initialized:
            self._call("start a transaction", self.client.init_transactions)
            self.memo["transactions"] = True
        marks = self._marks()
        committed = self._committed(marks)
        if committed is not None:
            log.info("upsert-kafka: %s already committed write '%s'", self.id, self.write_id)
            return committed
        self.client.begin_transaction()
        self.started = self.clock.monotonic()
        if initialized:
            self._check_not_fenced(marks)
        return None

    def _marks(self) -> list[TopicPartition]:
        """This id's markers: its group's committed offsets on partition 0 of every topic the write accepts."""
        # Read committed (KIP-447 require_stable): an offset of a transaction still completing is waited for.
        listed = self._call("read metadata", lambda timeout: self.client.list_topics(timeout=timeout)).topics
        topics = [t for t in listed if self.spec.topics.accepts(t)]
        if not topics:
            return []
        partitions = [TopicPartition(t, 0) for t in sorted(topics)]
        return self._call(
            "read the exactly-once markers",
            lambda timeout: self._group.client.committed(partitions, timeout=timeout),
            self._group.errors,
        )

    def _committed(self, marks: list[TopicPartition]) -> str | None:
        for mark in marks:
            write_id, _, fingerprint = (mark.metadata or "").rpartition("|")
            if write_id == self.write_id:
                return fingerprint
        return None

    def _check_not_fenced(self, marks: list[TopicPartition]) -> None:
        """Send a marker as it is now (unchanged if the transaction commits without records; undone by an
        abort): the brokers check the producer's epoch. Any error: StaleProducer, nothing was sent yet."""
        if not marks:
            raise StaleProducer(self.id)  # no topic to carry the check: a new producer fences instead
        mark = next((m for m in marks if m.offset >= 0), marks[0])
        again = TopicPartition(mark.topic, 0, max(0, mark.offset), metadata=mark.metadata or "")
        try:
            group = self._group.client.consumer_group_metadata()
            within(self.timeout_s, lambda: self.client.send_offsets_to_transaction([again], group, self.timeout_s))
        except KafkaException as e:
            log.info("upsert-kafka: the pooled producer of %s is not reused: %s", self.id, e.args[0].str())
            raise StaleProducer(self.id) from None

    def commit(self, marker_topic: str | None) -> None:
        """Commit the records and, with them, the marker (on partition 0 of a topic the task wrote)."""
        if marker_topic is not None:
            marker = TopicPartition(marker_topic, 0, 0, metadata=f"{self.write_id}|{self.fingerprint}")
            group = self._group.client.consumer_group_metadata()

            def send_marker(timeout: float) -> None:
                within(timeout, lambda: self.client.send_offsets_to_transaction([marker], group, timeout))

            self._call("commit the exactly-once marker", send_marker)
        self._call("commit the transaction", self.client.commit_transaction)

    def abort(self) -> None:
        """The task failed: send nothing more of it. An open transaction is aborted, best effort (an abandoned one is
        aborted anyway by the next attempt or by its timeout); before one opened, what is queued is dropped."""
        if self.started is None:
            self.client.purge()
            return
        try:
            self.client.abort_transaction(self.timeout_s)
        except KafkaException as e:
            log.warning("upsert-kafka: could not abort the transaction of %s: %s", self.id, e.args[0].str())

    def release(self, clean: bool) -> None:
        """Give the marker consumer back (kept only after a task without error)."""
        give_back(self._group, self.spec.kafka, clean)

    def _serve_group(self, timeout: float) -> None:
        message = self._group.client.poll(timeout)
        if message is not None and message.error() is not None:
            self._group.errors(message.error())

    def _call(self, what: str, attempt: Callable[[float], T], errors: ClientErrors | None = None) -> T:
        """`attempt(timeout_s)` under the retry policy. A transaction step may be retried after a retriable
        error (librdkafka's rule); one that requires an abort is final here: the task fails, its transaction is
        aborted and Spark runs the task again."""
        return with_retries(
            self.spec.kafka,
            f"{what} for transactional id '{self.id}'",
            attempt,
            errors=errors or self.errors,
            grant=self._grant(),
            transient=lambda error: is_transient(error) and not error.txn_requires_abort(),
            hint=self._hint,
        )

    def _grant(self) -> str:
        prefix = self.spec.transactional_id_prefix
        return (
            f"WRITE on the transactional ids and READ on the consumer groups whose names start with '{prefix}-' "
            f"(option 'sink.transactional-id-prefix'), and READ and WRITE on {self.spec.topics.describe()}"
        )

    def _hint(self, error: KafkaError) -> str:
        name = error.name()
        open_ms = (self.clock.monotonic() - self.started) * 1000 if self.started is not None else 0
        if self.transaction_timeout_ms and open_ms >= self.transaction_timeout_ms:
            return (
                f" (the transaction was open for {open_ms / 1000:.0f} s, longer than its timeout of "
                f"{self.transaction_timeout_ms} ms, so the brokers aborted it: raise option "
                "'properties.transaction.timeout.ms' or write fewer rows per task)"
            )
        if name == "INVALID_TRANSACTION_TIMEOUT":
            return " (option 'properties.transaction.timeout.ms' exceeds the brokers' transaction.max.timeout.ms)"
        if name in ("PRODUCER_FENCED", "_FENCED", "INVALID_PRODUCER_EPOCH"):
            return (
                " (another attempt of this task took over its transactional id: Spark ran the task twice at once, "
                "e.g. speculation, or another job uses the same 'sink.transactional-id-prefix' and 'sink.write-id')"
            )
        if error.txn_requires_abort():
            return " (the transaction must be aborted: the task's records are discarded and Spark runs it again)"
        return ""


class NoTransaction:
    """The producer of a task without exactly-once (sink.delivery-guarantee at-least-once or none): TaskTransaction's
    steps, each the at-least-once one or nothing."""

    def __init__(self, producer: Pooled[Producer]) -> None:
        self.client = producer.client

    def begin(self) -> str | None:
        """No earlier attempt committed anything to skip: every record is sent."""
        return None

    def commit(self, marker_topic: str | None) -> None:
        """Nothing to commit: the records count once acknowledged (the producer's flush)."""

    def abort(self) -> None:
        """The task failed: send nothing more of it (Spark runs it again whole)."""
        self.client.purge()

    def release(self, clean: bool) -> None:
        """No marker consumer to give back."""
