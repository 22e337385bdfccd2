"""Executor side: fetch the records of one partition range from Kafka, in chunks.

Deterministic for a given range (a replayed micro-batch reads the same records): it stops at the
range's end, and offset gaps (compaction, transaction markers, aborted records under read_committed)
are skipped, never waited for.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

from confluent_kafka import KafkaError, TopicPartition

from connector.errors import KafkaUnavailableError, UpsertKafkaError
from connector.kafka_clients import consumer
from connector.offsets import PartitionRange
from connector.options import KafkaSpec

CHUNK_RECORDS = 10_000


class DataLossError(UpsertKafkaError):
    """Records the query needs are no longer in Kafka."""


@dataclass
class Chunk:
    """Parallel lists of up to CHUNK_RECORDS records, in offset order."""

    keys: list[bytes | None]
    values: list[bytes | None]
    offsets: list[int]


def fetch_range(kafka: KafkaSpec, rng: PartitionRange, chunk_records: int = CHUNK_RECORDS) -> Iterator[Chunk]:
    if rng.end <= rng.start:
        return
    client = consumer(kafka)
    try:
        client.assign([TopicPartition(rng.topic, rng.partition, rng.start)])
        yield from _chunks(client, kafka, rng, chunk_records)
    finally:
        client.close()


def _chunks(client, kafka: KafkaSpec, rng: PartitionRange, chunk_records: int) -> Iterator[Chunk]:
    position, last_progress = rng.start, time.monotonic()
    while position < rng.end:
        messages = client.consume(num_messages=min(chunk_records, rng.end - position), timeout=1.0)
        keys: list[bytes | None] = []
        values: list[bytes | None] = []
        offsets: list[int] = []
        for m in messages:
            error = m.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    # The end of the log: everything up to here is gaps (markers, compaction).
                    if m.offset() >= rng.end:
                        position = rng.end
                    continue
                raise _fetch_error(kafka, rng, position, error)
            offset = m.offset()
            if offset >= rng.end:
                position = rng.end
                break
            keys.append(m.key())
            values.append(m.value())
            offsets.append(offset)
            position = offset + 1
        if offsets:
            last_progress = time.monotonic()
            yield Chunk(keys, values, offsets)
        elif position < rng.end and time.monotonic() - last_progress > kafka.timeout_s:
            raise KafkaUnavailableError(
                f"no record arrived for {kafka.timeout_s:g} s while reading {rng} at offset {position} "
                f"from {kafka.describe()}; check the brokers, or raise option 'client.timeout'"
            )


def _fetch_error(kafka: KafkaSpec, rng: PartitionRange, position: int, error: KafkaError) -> Exception:
    if error.code() in (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE):
        return DataLossError(
            f"data loss: offsets from {position} of topic '{rng.topic}' partition {rng.partition} are no "
            f"longer in Kafka (deleted by retention or compaction of the log start) while reading {rng}: "
            f"{error.str()}"
        )
    return KafkaUnavailableError(
        f"reading {rng} from {kafka.describe()} failed at offset {position}: {error.str()}"
    )
