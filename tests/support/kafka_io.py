"""Test helpers that talk to Kafka directly with confluent-kafka, bypassing the connector.

`bootstrap` is the servers of the plain broker, or a librdkafka configuration (the secured broker's harness
super user: `SecureKafka.admin_config`)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping

from confluent_kafka import Consumer, IsolationLevel, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, OffsetSpec
from pyspark_upsert_kafka.kafka.spec import KafkaSpec

from integration.kafka import create_topic as create_topic  # the one topic maker, for the tests too

Servers = str | Mapping[str, str]

# How long a query waits for its brokers with the default options (client.timeout + client.retries *
# client.retry-interval): a test that sets a shorter bound proves it was the one waited out by failing well within this.
DEFAULT_PATIENCE_S = KafkaSpec("any:9092").patience_s


def client_config(bootstrap: Servers, **more: object) -> dict:
    base = {"bootstrap.servers": bootstrap} if isinstance(bootstrap, str) else dict(bootstrap)
    return base | more


def add_partition(bootstrap: Servers, topic: str) -> None:
    """Grow the topic by one partition and wait until its metadata shows it."""
    admin = AdminClient(client_config(bootstrap))
    count = len(admin.list_topics(topic, timeout=10).topics[topic].partitions)
    admin.create_partitions([NewPartitions(topic, count + 1)])[topic].result(30)
    deadline = time.monotonic() + 30
    while len(admin.list_topics(topic, timeout=10).topics[topic].partitions) <= count:
        assert time.monotonic() < deadline, "the new partition did not appear"
        time.sleep(0.1)


def produce(
    bootstrap: Servers,
    topic: str,
    records: Iterable[tuple],
    partition: int | None = None,
    headers: list | None = None,
) -> None:
    """Produce records synchronously, in order, with the Java-compatible partitioner: each (key, value) or
    (key, value, partition, timestamp_ms), None leaving either to the client; `partition` for all of them."""
    producer = Producer(client_config(bootstrap, partitioner="murmur2_random", **{"linger.ms": 5}))
    errors: list = []
    for key, value, *where in records:
        own, timestamp = [*where, None, None][:2]
        target = own if own is not None else partition
        kwargs: dict = {"on_delivery": lambda e, m: e and errors.append(e)}
        if target is not None:
            kwargs["partition"] = target
        if timestamp is not None:
            kwargs["timestamp"] = timestamp
        if headers is not None:
            kwargs["headers"] = headers
        producer.produce(topic, value, key, **kwargs)
    assert producer.flush(30) == 0 and not errors, errors


def consume_all(bootstrap: Servers, topic: str) -> list[tuple[int, int, bytes | None, bytes | None]]:
    """Every committed record of the topic as (partition, offset, key, value), in partition/offset order."""
    return [(m.partition(), m.offset(), m.key(), m.value()) for m in consume_messages(bootstrap, topic)]


def consume_messages(bootstrap: Servers, topic: str) -> list:
    """Every committed record of the topic as confluent-kafka Messages (timestamps, headers), read_committed,
    in partition/offset order."""
    admin = AdminClient(client_config(bootstrap))
    partitions = sorted(admin.list_topics(timeout=10).topics[topic].partitions)
    isolation = {"enable.partition.eof": True, "enable.auto.commit": False, "isolation.level": "read_committed"}
    consumer = Consumer(client_config(bootstrap, **{"group.id": "tests"}, **isolation))
    out = []
    try:
        starts, highs = _offsets(admin, topic, OffsetSpec.earliest), _offsets(admin, topic, OffsetSpec.latest)
        pending = {p: highs[p] for p in partitions if highs[p] > starts[p]}
        consumer.assign([TopicPartition(topic, p, starts[p]) for p in pending])
        # Until each partition reaches its log end offset, or EOF there (trailing transaction markers). An EOF
        # before it is the last stable offset: a transaction's commit markers are written after its commit
        # returned, so a read right after a commit waits for them (bounded: an open transaction may stay open).
        deadline = time.monotonic() + 15
        while pending:
            for m in consumer.consume(10_000, timeout=0.5):
                if m.error():
                    if m.error().code() != KafkaError._PARTITION_EOF:
                        raise RuntimeError(m.error().str())
                    if m.offset() >= pending.get(m.partition(), 0) or time.monotonic() > deadline:
                        pending.pop(m.partition(), None)
                    continue
                out.append(m)
                if m.offset() + 1 >= pending.get(m.partition(), 0):
                    pending.pop(m.partition(), None)
    finally:
        consumer.close()
    return sorted(out, key=lambda m: (m.partition(), m.offset()))


def log_ends(bootstrap: Servers, topic: str, *, stable: bool = False) -> dict[int, int]:
    """Each partition's end: the high watermark (every record, open transactions' and markers too), or with
    stable=True the last stable offset, how far a read_committed reader may read (an open transaction holds
    it back until it commits or aborts; right after a commit, until its markers are written)."""
    return _offsets(AdminClient(client_config(bootstrap)), topic, OffsetSpec.latest, stable)


def _offsets(admin: AdminClient, topic: str, which, stable: bool = False) -> dict[int, int]:
    partitions = sorted(admin.list_topics(timeout=10).topics[topic].partitions)
    isolation = IsolationLevel.READ_COMMITTED if stable else IsolationLevel.READ_UNCOMMITTED
    found = admin.list_offsets({TopicPartition(topic, p): which() for p in partitions}, isolation_level=isolation)
    return {tp.partition: future.result(30).offset for tp, future in found.items()}
