"""Executor side: fetch the records of one partition range from Kafka, in chunks.

Deterministic for a given range (a replayed micro-batch reads the same records): it never yields a record
outside [start, end), and offset gaps (compaction, transaction markers, aborted records under
read_committed) are skipped, never waited for. When the log moved under the range after it was planned
(records deleted, the topic recreated or truncated), the consumer is not left to reset itself: the data-loss
rule applies (an error naming the missing offsets, or with scan.fail-on-data-loss=false a warning and the
rest of the range from the log's first offset). Record metadata is collected only for the kinds asked for.
The consumer comes from the Python worker's pool (kafka/pool.py): assigned to this range alone, it yields only this
partition's records from the range's start, whatever it was assigned before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

from confluent_kafka import Consumer, KafkaError, Message, TopicPartition

from ..errors import KafkaUnavailableError
from ..kafka.clients import UNUSED_GROUP_ERRORS, borrow_consumer, give_back
from ..kafka.errors import ClientErrors, is_transient, kafka_error, with_retries
from ..kafka.pool import Pooled
from ..kafka.spec import KafkaSpec
from ..kernel.clock import SYSTEM_CLOCK, Clock
from .data_loss import lost
from .range_calculator import PartitionRange

CHUNK_RECORDS = 10_000
_TIMESTAMP_TYPES = {0: "NoTimestampType", 1: "CreateTime", 2: "LogAppendTime"}

T = TypeVar("T")


@dataclass
class Records:
    """Parallel lists of records in offset order; `meta` holds one list per requested metadata kind."""

    keys: list[bytes | None]
    values: list[bytes | None]
    offsets: list[int]
    meta: dict[str, list[object]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.offsets)

    def take(self, indices: list[int]) -> Records:
        def pick(items: list[T]) -> list[T]:
            return [items[i] for i in indices]

        return Records(
            pick(self.keys), pick(self.values), pick(self.offsets), {k: pick(v) for k, v in self.meta.items()}
        )


def _headers(m: Message) -> object:
    return m.headers() or []  # librdkafka's list: the record's order, repeated keys kept


# How each per-record metadata kind is read off a confluent_kafka Message. Both header kinds take the list;
# they differ in their column type (range_decoder.py).
_META_READERS: dict[str, Callable[[Message], object]] = {
    "timestamp": lambda m: m.timestamp()[1],
    "timestamp-type": lambda m: _TIMESTAMP_TYPES.get(m.timestamp()[0], "NoTimestampType"),
    "headers": _headers,
    "header-list": _headers,
    "leader-epoch": lambda m: m.leader_epoch(),
}


def fetch_range(
    kafka: KafkaSpec,
    rng: PartitionRange,
    meta_kinds: tuple[str, ...] = (),
    fail_on_data_loss: bool = True,
    chunk_records: int = CHUNK_RECORDS,
) -> Iterator[Records]:
    if rng.end <= rng.start:
        return
    # From the worker's pool (auto.offset.reset=error: offsets gone under the range are reported). A consumer
    # is given back only after a whole range read without error; one that read part of a range is closed.
    lent = borrow_consumer(kafka)
    clean = False
    try:
        _knows_topic(lent, kafka, rng)
        lent.client.assign([TopicPartition(rng.topic, rng.partition, rng.start)])
        readers = [(kind, _META_READERS[kind]) for kind in meta_kinds if kind in _META_READERS]
        yield from _chunks(lent.client, lent.errors, kafka, rng, readers, chunk_records, fail_on_data_loss)
        clean = True
    finally:
        give_back(lent, kafka, clean)


def _knows_topic(lent: Pooled[Consumer], kafka: KafkaSpec, rng: PartitionRange) -> None:
    """Have the consumer look the topic up now: a consumer already connected learns a topic assigned to it
    only at librdkafka's next one-second metadata scan."""
    known = lent.memo.setdefault("topics", set())
    if rng.topic not in known:
        with_retries(
            kafka,
            f"read the metadata of topic '{rng.topic}'",
            lambda timeout: lent.client.list_topics(rng.topic, timeout=timeout),
            errors=lent.errors,
            grant=_read_grant(rng),
        )
        known.add(rng.topic)


def _chunks(
    client: Consumer,
    errors: ClientErrors,
    kafka: KafkaSpec,
    rng: PartitionRange,
    readers: list[tuple[str, Callable[[Message], object]]],
    chunk_records: int,
    fail_on_data_loss: bool,
    clock: Clock = SYSTEM_CLOCK,
) -> Iterator[Records]:
    # A broker restart or a leader change only pauses the records: librdkafka reconnects and fetches from the
    # new leader by itself. No record for the spec's whole bound, or an error no retry cures, fails the task.
    position, last_progress = rng.start, clock.monotonic()
    while position < rng.end:
        messages = client.consume(num_messages=min(chunk_records, rng.end - position), timeout=1.0)
        if errors.final is not None:
            raise kafka_error(kafka, f"read {rng}", errors.final, _read_grant(rng))
        records = Records([], [], [], {kind: [] for kind, _ in readers})
        keys, values, offsets = records.keys, records.values, records.offsets
        collect = [(records.meta[kind].append, read) for kind, read in readers]  # per record: no look-up
        for m in messages:
            error = m.error()
            topic = m.topic()
            if topic is not None and (topic != rng.topic or m.partition() != rng.partition):
                continue  # never this range's: left from an earlier assignment of a pooled consumer
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    # The end of the log: everything up to here is gaps (markers, compaction).
                    eof = m.offset()
                    if eof is not None and eof >= rng.end:
                        position = rng.end
                    continue
                if error.code() not in (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE):
                    if is_transient(error) or error.code() in UNUSED_GROUP_ERRORS:
                        continue  # librdkafka goes on by itself; the stall bound below applies
                    raise kafka_error(kafka, f"read {rng} (at offset {position})", error, _read_grant(rng))
                position, last_progress = _past_lost(client, kafka, rng, position, fail_on_data_loss), clock.monotonic()
                break  # what this call returned after the error predates the new position
            offset = m.offset()
            # Below the range (or read already): never the planned records. (A record always has an offset.)
            if offset is None or offset < position:
                continue
            if offset >= rng.end:
                position = rng.end
                break
            keys.append(m.key())
            values.append(m.value())
            offsets.append(offset)
            for append, read in collect:
                append(read(m))
            position = offset + 1
        if offsets:
            last_progress = clock.monotonic()
            yield records
        elif position < rng.end and clock.monotonic() - last_progress > kafka.timeout_s:
            first, end = _log_bounds(client, kafka, rng, position)
            if end < rng.end:  # planned up to rng.end, the log now ends before it: truncated or recreated
                lost(rng.topic, rng.partition, position, rng.end, fail_on_data_loss, _shrunk(first, end))
                return
            if clock.monotonic() - last_progress <= kafka.patience_s:
                continue  # the records are there: a broker restarting or a leader moving, waited for
            raise KafkaUnavailableError(
                f"no record arrived for {kafka.patience_s:g} s while reading {rng} at offset {position} "
                f"from {kafka.describe()}: check that the brokers are up; {kafka.patience_doc()}"
            )


def _read_grant(rng: PartitionRange) -> str:
    return f"READ and DESCRIBE on topic '{rng.topic}'"


def _past_lost(client: Consumer, kafka: KafkaSpec, rng: PartitionRange, position: int, fail_on_data_loss: bool) -> int:
    """The log no longer holds `position` (out of range): apply the data-loss rule to what is missing, and
    return where reading goes on (the log's first offset, or the range's end when nothing of it is left)."""
    first, end = _log_bounds(client, kafka, rng, position)
    if first > position:  # deleted from the log's start: retention, delete-records
        resume = min(first, rng.end)
        lost(rng.topic, rng.partition, position, resume, fail_on_data_loss)
    else:  # the log ends before `position`: the topic was recreated or truncated
        resume = rng.end
        lost(rng.topic, rng.partition, position, rng.end, fail_on_data_loss, _shrunk(first, end))
    if resume < rng.end:
        client.assign([TopicPartition(rng.topic, rng.partition, resume)])
    return resume


def _shrunk(first: int, end: int) -> str:
    return f"the topic was recreated or truncated: its log now holds offsets [{first}, {end})"


def _log_bounds(client: Consumer, kafka: KafkaSpec, rng: PartitionRange, position: int) -> tuple[int, int]:
    """The partition's first offset and end (high watermark), from the broker."""
    partition = TopicPartition(rng.topic, rng.partition)
    return with_retries(
        kafka,
        f"read the first and last offsets of {rng} (reading stopped at offset {position})",
        lambda timeout: client.get_watermark_offsets(partition, timeout=timeout, cached=False),
        grant=_read_grant(rng),
    )
