"""The benchmark's Kafka side, with confluent-kafka alone (no Spark): the data set, the raw client ceilings
(produce and consume with no decoding), a fixed-rate producer for latency, and reading latencies back.

Test/dev tooling only: the product never imports this package.
"""

from __future__ import annotations

import multiprocessing
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import orjson
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from pyspark_upsert_kafka.formats.json.values import json_bytes  # right-sized: a data set held in memory

from integration import kafka

PARTITIONS = 4
# Value columns (the key is {"id": ...}); about 150 bytes of JSON per value.
VALUE_DDL = "id BIGINT, name STRING, category STRING, price DOUBLE, quantity INT, ts BIGINT"
AVRO_VALUE_SCHEMA = {
    "type": "record",
    "name": "Order",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": "string"},
        {"name": "category", "type": "string"},
        {"name": "price", "type": "double"},
        {"name": "quantity", "type": "int"},
        {"name": "ts", "type": "long"},
    ],
}
_PRODUCER = {"partitioner": "murmur2_random", "linger.ms": 20, "batch.num.messages": 10000, "acks": "all"}


def row(i: int, revision: int = 0) -> dict:
    """Key i's row; another `revision` changes its quantity (an update of the key)."""
    return {
        "id": i,
        "name": f"customer-name-{i:010d}-of-the-shop",
        "category": f"category-{i % 97:04d}-general-goods",
        "price": round((i % 100_000) / 7, 2),
        "quantity": (i + revision) % 13,
        "ts": 1_790_000_000_000 + i,
    }


def json_records(n: int, revision: int = 0) -> list[tuple[bytes, bytes]]:
    return [(json_bytes({"id": i}), json_bytes(row(i, revision))) for i in range(n)]


def create_topic(bootstrap: str, name: str, partitions: int = PARTITIONS, **config: str) -> str:
    """A benchmark's topic: PARTITIONS partitions unless told."""
    return kafka.create_topic(bootstrap, name, partitions, config)


# The raw client's ceilings run one process per core, as Spark's local[2] runs two Python workers.
PROCESSES = 2


def _produce_share(args: tuple[str, str, int, int, int]) -> float:
    bootstrap, topic, n, revision, i = args
    return produce(bootstrap, topic, json_records(n, revision)[i::PROCESSES])  # records made before the clock starts


def _consume_share(args: tuple[str, str, int]) -> float:
    bootstrap, topic, i = args
    return consume(bootstrap, topic, list(range(i, PARTITIONS, PROCESSES)))[1]


def _in_processes(work: Callable, args: list) -> float:
    """Run work over args in fresh processes (spawned: forking a process with live librdkafka threads
    can deadlock); the seconds of the slowest, each timed inside its process."""
    with multiprocessing.get_context("spawn").Pool(PROCESSES) as pool:
        return max(pool.map(work, args))


def produce_parallel(bootstrap: str, topic: str, n: int, revision: int = 0) -> float:
    """json_records(n, revision) split over PROCESSES producers; the seconds until all are acknowledged."""
    return _in_processes(_produce_share, [(bootstrap, topic, n, revision, i) for i in range(PROCESSES)])


def consume_parallel(bootstrap: str, topic: str) -> float:
    """The partitions split over PROCESSES consumers; the seconds until all are read."""
    return _in_processes(_consume_share, [(bootstrap, topic, i) for i in range(PROCESSES)])


def produce(bootstrap: str, topic: str, records: list[tuple[bytes, bytes]]) -> float:
    """Produce every record (keyed, Java-compatible partitioner, acks=all); returns the seconds it took."""
    producer = Producer({"bootstrap.servers": bootstrap, **_PRODUCER})
    failures: list = []
    started = time.perf_counter()
    for key, value in records:
        while True:
            try:
                producer.produce(topic, value, key, on_delivery=lambda e, m: e and failures.append(e))
                break
            except BufferError:
                producer.poll(0.1)
    if producer.flush(120) or failures:
        raise RuntimeError(f"producing to {topic} failed: {failures[:3]}")
    return time.perf_counter() - started


def consume(bootstrap: str, topic: str, partitions: list[int] | None = None) -> tuple[int, float]:
    """Read the partitions (default: all) as bytes, read_committed, no decoding: (records, seconds)."""
    partitions = list(range(PARTITIONS)) if partitions is None else partitions
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-ceiling",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": "read_committed",
        }
    )
    started = time.perf_counter()
    consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
    done: set[int] = set()
    count = 0
    while len(done) < len(partitions):
        for m in consumer.consume(10_000, timeout=1.0):
            error = m.error()
            if error is None:
                count += 1
            elif error.code() == KafkaError._PARTITION_EOF:
                done.add(m.partition())
            else:
                raise RuntimeError(error.str())
    seconds = time.perf_counter() - started
    consumer.close()
    return count, seconds


def confluent_avro_records(n: int, schema_id: int) -> list[tuple[bytes, bytes]]:
    """Keys as JSON, values in the Confluent wire format (magic 0, schema id, Avro body)."""
    import io

    import fastavro

    parsed = fastavro.parse_schema(AVRO_VALUE_SCHEMA)
    header = struct.pack(">bI", 0, schema_id)
    out = []
    for i in range(n):
        buffer = io.BytesIO()
        buffer.write(header)
        fastavro.schemaless_writer(buffer, parsed, row(i))
        out.append((json_bytes({"id": i}), buffer.getvalue()))
    return out


def _next_row(i: int) -> tuple[bytes, bytes]:
    return orjson.dumps({"id": i}), orjson.dumps(row(i))


@dataclass
class RateProducer:
    """Produces `rate` records/s for `seconds` from a thread: record i is `record(i)` (key, value), by default key i
    with row(i); the record's CreateTime is its produce time."""

    bootstrap: str
    topic: str
    rate: int
    seconds: float
    record: Callable[[int], tuple[bytes, bytes]] = _next_row
    sent: int = 0

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self._run, daemon=True)
        thread.start()
        return thread

    def _run(self) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, **_PRODUCER, "linger.ms": 0})
        tick, per_tick = 0.01, max(1, self.rate // 100)
        started = time.monotonic()
        while time.monotonic() - started < self.seconds:
            for _ in range(per_tick):
                key, value = self.record(self.sent)
                producer.produce(self.topic, value, key)
                self.sent += 1
            producer.poll(0)
            time.sleep(max(0.0, started + (self.sent / per_tick) * tick - time.monotonic()))
        producer.flush(30)


def latencies(bootstrap: str, topic: str, expected: int, timeout: float = 120) -> list[float]:
    """Milliseconds from produce to arrival in the output topic per record: the output record's LogAppendTime
    minus the `produced_ms` its value carries. Waits until `expected` records arrived."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-latency", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    out: list[float] = []
    deadline = time.monotonic() + timeout
    while len(out) < expected and time.monotonic() < deadline:
        for m in consumer.consume(10_000, timeout=1.0):
            if m.error() is None and m.value() is not None:
                out.append(m.timestamp()[1] - orjson.loads(m.value())["produced_ms"])
    consumer.close()
    return out
