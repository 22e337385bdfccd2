"""Executor side: fetch the records of one partition range from Kafka, in chunks.

Deterministic for a given range (a replayed micro-batch reads the same records): it stops at the
range's end, and offset gaps (compaction, transaction markers, aborted records under read_committed)
are skipped, never waited for. Record metadata is collected only for the kinds the table asks for.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError, TopicPartition

from ..errors import DataLossError, KafkaUnavailableError
from ..kafka import consumer
from ..options.common import KafkaSpec
from .offsets import PartitionRange

CHUNK_RECORDS = 10_000
_TIMESTAMP_TYPES = {0: "NoTimestampType", 1: "CreateTime", 2: "LogAppendTime"}


@dataclass
class Records:
    """Parallel lists of records in offset order; `meta` holds one list per requested metadata kind."""

    keys: list[bytes | None]
    values: list[bytes | None]
    offsets: list[int]
    meta: dict[str, list[Any]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.offsets)

    def take(self, indices: list[int]) -> Records:
        def pick(items: list) -> list:
            return [items[i] for i in indices]

        return Records(
            pick(self.keys), pick(self.values), pick(self.offsets), {k: pick(v) for k, v in self.meta.items()}
        )


# How each per-record metadata kind is read off a confluent_kafka Message.
_META_READERS = {
    "timestamp": lambda m: m.timestamp()[1],
    "timestamp-type": lambda m: _TIMESTAMP_TYPES.get(m.timestamp()[0], "NoTimestampType"),
    "headers": lambda m: m.headers() or [],
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
    client = consumer(kafka, reset_to_earliest=not fail_on_data_loss)
    try:
        client.assign([TopicPartition(rng.topic, rng.partition, rng.start)])
        readers = [(kind, _META_READERS[kind]) for kind in meta_kinds if kind in _META_READERS]
        yield from _chunks(client, kafka, rng, readers, chunk_records)
    finally:
        client.close()


def _chunks(client: Any, kafka: KafkaSpec, rng: PartitionRange, readers: list, chunk_records: int) -> Iterator[Records]:
    position, last_progress = rng.start, time.monotonic()
    while position < rng.end:
        messages = client.consume(num_messages=min(chunk_records, rng.end - position), timeout=1.0)
        records = Records([], [], [], {kind: [] for kind, _ in readers})
        keys, values, offsets = records.keys, records.values, records.offsets
        for m in messages:
            error = m.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    # The end of the log: everything up to here is gaps (markers, compaction).
                    if m.offset() >= rng.end:
                        position = rng.end
                    continue
                raise _fetch_error(client, kafka, rng, position, error)
            offset = m.offset()
            if offset >= rng.end:
                position = rng.end
                break
            keys.append(m.key())
            values.append(m.value())
            offsets.append(offset)
            for kind, read in readers:
                records.meta[kind].append(read(m))
            position = offset + 1
        if offsets:
            last_progress = time.monotonic()
            yield records
        elif position < rng.end and time.monotonic() - last_progress > kafka.timeout_s:
            raise KafkaUnavailableError(
                f"no record arrived for {kafka.timeout_s:g} s while reading {rng} at offset {position} "
                f"from {kafka.describe()}; check the brokers, or raise option 'client.timeout'"
            )


def _fetch_error(client: Any, kafka: KafkaSpec, rng: PartitionRange, position: int, error: KafkaError) -> Exception:
    if error.code() in (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE):
        # Deleted after the range was planned: name the missing range when the broker still answers.
        try:
            first, _ = client.get_watermark_offsets(TopicPartition(rng.topic, rng.partition), timeout=kafka.timeout_s)
            missing = f"offsets [{position}, {first})" if first > position else f"offsets from {position}"
        except Exception:  # the error below is the one to report
            missing = f"offsets from {position}"
        return DataLossError(
            f"data loss: {missing} of topic '{rng.topic}' partition {rng.partition} are no "
            f"longer in Kafka (deleted by retention, or the topic was recreated) while reading {rng}: "
            f"{error.str()}; set 'scan.fail-on-data-loss' to false to skip them"
        )
    return KafkaUnavailableError(f"reading {rng} from {kafka.describe()} failed at offset {position}: {error.str()}")
