"""Executor side: one task's producer — records out, delivery failures back, per the delivery guarantee. The
producer is borrowed from the Python worker's pool (kafka/pool.py) and goes back to it only after a clean task.

`none`: acks=1, no idempotence. `at-least-once` (default): idempotent, acks=all; the task succeeds only
after every record is acknowledged. `exactly-once`: the same inside one transaction per task, which the task's
ExactlyOnceTask opens (write.exactly_once); in the other modes the task's NoTransactionTask gives the producer a
NoTransaction, whose steps are the at-least-once ones. In every mode a record that fails fails the task, naming its
topic and key.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterable, Sequence
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from ..errors import KafkaUnavailableError, RecordError, TopicError, escaped_prefix
from ..kafka.clients import borrow_producer, give_back
from ..kafka.errors import ACCESS_CODES, kafka_error, with_retries
from ..kernel.clock import SYSTEM_CLOCK, Clock
from .exactly_once import NO_TRANSACTION_TASK, ExactlyOnceTask, NoTransactionTask
from .partitioners import Partitioner, load_partitioner
from .spec import NONE, WriteSpec
from .target import WriteTarget
from .transactions import StaleProducer

log = logging.getLogger("upsert_kafka")

_UNASSIGNED = -1  # librdkafka: let the partitioner choose
_PURGED = (KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT)
_POLL_EVERY = 10_000
# Every poll and flush of a producer waits under 0.2 s: from 0.2 s on, confluent-kafka serves callbacks in
# chunks and goes on after one raised, so a fatal client error it raises (an ACL denying the idempotent producer
# its id) is overwritten by the purge reports that follow it, or lost ("returned NULL without setting an
# exception"), and the task would report purged records instead of the cause.
_SERVE_S = 0.1


def producer_settings(spec: WriteSpec, target: WriteTarget) -> dict[str, Any]:
    """Defaults the user's properties may change (a transaction's own settings: ExactlyOnceTask.settings)."""
    defaults: dict[str, Any] = {}
    if spec.guarantee == NONE:
        defaults |= {"acks": 1, "enable.idempotence": False}
    if target.max_message_bytes:
        # A batch above the topic's limit is refused whole; keep batches under it so only an oversized
        # record itself fails (librdkafka's batch.size includes the framing).
        defaults["batch.size"] = max(1, min(1_000_000, target.max_message_bytes))
    return defaults


class Sender:
    """Produces one task's records; raises the first delivery failure, naming the record's topic and key. Its
    producer is borrowed from the worker's pool and given back by `release`."""

    def __init__(
        self,
        spec: WriteSpec,
        target: WriteTarget,
        transactions: ExactlyOnceTask | NoTransactionTask = NO_TRANSACTION_TASK,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.spec, self.target, self.transactions, self.clock = spec, target, transactions, clock
        self.failure: tuple[Any, str, bytes | None] | None = None  # (error, topic, key) of the first failure
        self.failures = 0
        self.defaults = producer_settings(spec, target)
        self.owned = transactions.settings()
        self._borrow()
        self.partitioner = load_partitioner(spec.partitioner) if spec.partitioner else None
        self.partition_counts: dict[str, int] = {}
        self.first_topic: str | None = None

    def _borrow(self, fresh: bool = False) -> None:
        self.lent = borrow_producer(self.spec.kafka, self.defaults, fresh=fresh, **self.owned)
        self.lent.relay.target = self._on_delivery
        self.client = self.lent.client
        # Authentication, TLS and fatal errors reach only the error callback; without it they are timeouts.
        self.errors = self.lent.errors
        self.transaction = self.transactions.transaction(self.lent)

    # -- lifecycle ----------------------------------------------------------------------------------

    def begin(self) -> str | None:
        """Exactly-once: the fingerprint of the rows an earlier attempt committed this write with, if one did
        (then nothing is to be sent); None otherwise."""
        try:
            return self.transaction.begin()
        except StaleProducer:  # fenced while pooled; nothing was sent: go on with a new producer
            self.transaction.release(clean=True)
            give_back(self.lent, self.spec.kafka, clean=False)
            self._borrow(fresh=True)
            return self.transaction.begin()

    def finish(self) -> None:
        """Everything acknowledged (and, with exactly-once, committed with the rows' fingerprint) or an error."""
        self.flush()
        self.transaction.commit(self.first_topic)

    def fail(self) -> None:
        """The task failed: send nothing more (Spark runs it again whole)."""
        self.transaction.abort()

    def release(self, clean: bool) -> None:
        """Give the producer back to the pool: kept for the next task only when `clean` (this task ended without
        error, every record acknowledged and its transaction, if any, committed)."""
        self.transaction.release(clean)
        give_back(self.lent, self.spec.kafka, clean and self.failure is None)

    # -- records --------------------------------------------------------------------------------------

    def produce(
        self,
        topics: str | list[str],
        keys: list[bytes],
        values: Sequence[bytes | None],
        timestamps: list[int] | None = None,
        headers: list[Any] | None = None,
    ) -> None:
        """Send records; `topics` is one topic or one per record; timestamps in epoch ms (0: now)."""
        if self.first_topic is None and keys:
            self.first_topic = topics if isinstance(topics, str) else topics[0]
        each_topic = itertools.repeat(topics) if isinstance(topics, str) else topics
        partitions: Iterable[int] = (
            itertools.repeat(_UNASSIGNED)
            if self.partitioner is None
            else self._partitions(self.partitioner, topics, keys)
        )
        records = zip(
            each_topic,
            keys,
            values,
            partitions,
            itertools.repeat(0) if timestamps is None else timestamps,
            itertools.repeat(None) if headers is None else headers,
        )
        produce = self.client.produce
        for i, (topic, key, value, partition, timestamp, header) in enumerate(records):
            while True:
                try:
                    produce(topic, value, key, partition=partition, timestamp=timestamp, headers=header)
                    break
                except BufferError:  # the local queue is full: let librdkafka send, then retry
                    self._poll(_SERVE_S)
                except KafkaException as e:
                    self.errors.raised(e)  # a fatal client error fails every produce: report it, not the record
                    self._raise_failure()
                    raise self._record_error(e.args[0], topic, key, 1) from None
            if i % _POLL_EVERY == _POLL_EVERY - 1:
                self._poll(0)  # fail fast rather than queue records behind a broken connection

    def _partitions(self, partitioner: Partitioner, topics: str | list[str], keys: list[bytes]) -> list[int]:
        """The user partitioner's choice per record, checked to be a partition of the record's topic."""
        out = []
        for topic, key in zip(itertools.repeat(topics) if isinstance(topics, str) else topics, keys):
            count = self.partition_counts.get(topic) or self._partition_count(topic)
            partition = partitioner(key, count)
            if not isinstance(partition, int) or not 0 <= partition < count:
                raise RecordError(
                    f"option 'sink.partitioner' ({self.spec.partitioner}) returned {partition!r} for the key "
                    f"{escaped_prefix(key)} of topic '{topic}', which has partitions 0 to {count - 1}"
                )
            out.append(partition)
        return out

    def _partition_count(self, topic: str) -> int:
        found = with_retries(
            self.spec.kafka,
            f"read the partitions of topic '{topic}'",
            lambda timeout: self.client.list_topics(topic, timeout=timeout),
            errors=self.errors,
            grant=f"DESCRIBE and WRITE on topic '{topic}'",
        ).topics.get(topic)
        if found is None or found.error is not None or not found.partitions:
            reason = found.error.str() if found is not None and found.error is not None else "no partitions"
            raise TopicError(f"cannot write topic '{topic}' at {self.spec.kafka.describe()}: {reason}")
        self.partition_counts[topic] = len(found.partitions)
        return len(found.partitions)

    # -- acknowledgements ---------------------------------------------------------------------------

    def flush(self) -> None:
        """Wait until every record sent so far is acknowledged; raise the first failure."""
        deadline = self.clock.monotonic() + 130 + self.spec.kafka.timeout_s  # beyond message.timeout.ms
        remaining = self._flush()
        while remaining:
            self._raise_failure()
            if self.clock.monotonic() > deadline:
                raise KafkaUnavailableError(
                    f"{remaining} record(s) were still unacknowledged by {self.spec.kafka.describe()} after the "
                    "flush timeout; nothing of this task is reported as written"
                )
            remaining = self._flush()
        self._raise_failure()

    def _flush(self) -> int:
        try:
            return self.client.flush(_SERVE_S)
        except (KafkaException, SystemError) as e:
            self.errors.raised(e)  # a fatal client error is raised by the flush that serves it
            self._raise_failure()
            raise

    def _poll(self, timeout: float) -> None:
        """Serve delivery reports; raise the first failure."""
        try:
            self.client.poll(timeout)
        except (KafkaException, SystemError) as e:
            self.errors.raised(e)
            self._raise_failure()
            raise
        self._raise_failure()

    def _on_delivery(self, error: Any, message: Any) -> None:
        if error is not None:
            self.failures += 1
            if self.failure is None:
                try:
                    self.failure = (error, message.topic(), message.key())
                except SystemError as e:  # a fatal client error, pending: the purges that follow report it
                    self.errors.pending(e)

    def _raise_failure(self) -> None:
        # The client's own error first: records purged or timed out because of it say nothing of the cause.
        final = self.errors.check()
        if final is None and self.failure is not None and self.failure[0].code() in _PURGED:
            # The error that made librdkafka purge follows its reports (seconds later on a loaded machine).
            deadline = self.clock.monotonic() + min(5.0, self.spec.kafka.timeout_s)
            while final is None and self.clock.monotonic() < deadline:
                self.clock.sleep(0.05)
                final = self.errors.check()
        if final is not None:
            raise self._access_error(final, self.failure[1] if self.failure is not None else self.first_topic)
        if self.failure is not None:
            error, topic, key = self.failure
            raise self._record_error(error, topic, key, self.failures)

    def _access_error(self, error: Any, topic: str | None) -> Exception:
        where = f"topic '{topic}'" if topic else self.spec.topics.describe()
        return kafka_error(self.spec.kafka, f"write to {where}", error, f"WRITE and DESCRIBE on {where}")

    def _record_error(self, error: Any, topic: str, key: bytes | None, count: int) -> Exception:
        if error.code() in ACCESS_CODES:
            # Not this record's fault: the client's user or connection (authorization, authentication, TLS).
            return self._access_error(error, topic)
        # Not acknowledged within message.timeout.ms: the brokers were away, the record is not at fault.
        kind = KafkaUnavailableError if error.code() == KafkaError._MSG_TIMED_OUT else RecordError
        return kind(
            f"{count} record(s) could not be written to topic '{topic}' at {self.spec.kafka.describe()}: "
            f"{error.str()}{_hint(error.name(), self.target.max_message_bytes)} (first failed record's key: "
            f"{escaped_prefix(key)})"
        )


def _hint(name: str, max_message_bytes: int | None) -> str:
    if name in ("MSG_SIZE_TOO_LARGE", "_MSG_SIZE_TOO_LARGE"):
        limit = f"{max_message_bytes} bytes" if max_message_bytes else "its max.message.bytes"
        return (
            f" — the record is larger than the topic accepts ({limit}) or than the client's "
            "'properties.message.max.bytes'"
        )
    if name in ("UNKNOWN_TOPIC_OR_PART", "_UNKNOWN_TOPIC"):
        return " — the topic does not exist and the brokers do not create topics on first write"
    if name == "_MSG_TIMED_OUT":
        return " — not acknowledged in time: check that the brokers are up and reachable"
    return ""
