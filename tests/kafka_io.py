"""Test helpers that talk to Kafka directly with confluent-kafka, bypassing the connector."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def create_topic(bootstrap: str, name: str, partitions: int = 1, config: dict[str, str] | None = None) -> str:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1, config=config or {})])[name].result(30)
    deadline = time.monotonic() + 30  # metadata reaches every listener shortly after creation
    while len(admin.list_topics(timeout=10).topics.get(name).partitions or {}) < partitions:
        if time.monotonic() > deadline:
            raise TimeoutError(f"topic {name} did not appear")
        time.sleep(0.1)
    return name


def produce(bootstrap: str, topic: str, records: list[tuple[bytes | None, bytes | None]], partition: int | None = None) -> None:
    """Produce (key, value) records with the Java-compatible partitioner, synchronously."""
    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random", "linger.ms": 5})
    errors: list = []
    for key, value in records:
        kwargs = {} if partition is None else {"partition": partition}
        producer.produce(topic, value, key, on_delivery=lambda e, m: e and errors.append(e), **kwargs)
    assert producer.flush(30) == 0 and not errors, errors


def consume_all(bootstrap: str, topic: str) -> list[tuple[int, int, bytes | None, bytes | None]]:
    """Every record of the topic as (partition, offset, key, value), in partition/offset order."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    partitions = sorted(admin.list_topics(timeout=10).topics[topic].partitions)
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "tests", "enable.partition.eof": True,
         "enable.auto.commit": False, "isolation.level": "read_committed"}
    )
    out = []
    try:
        for p in partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            if high <= low:
                continue
            consumer.assign([TopicPartition(topic, p, low)])
            done = False
            while not done:
                for m in consumer.consume(500, timeout=5):
                    if m.error():
                        done = m.error().code() == KafkaError._PARTITION_EOF
                        if not done:
                            raise RuntimeError(m.error().str())
                        continue
                    out.append((m.partition(), m.offset(), m.key(), m.value()))
    finally:
        consumer.close()
    return out
