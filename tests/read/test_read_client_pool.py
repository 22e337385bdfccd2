"""Range reads borrow their consumer from the worker's pool (kafka/pool.py) against the real broker: one consumer
serves the range reads of one process in turn, each read yields exactly its own range (never what the
consumer fetched for an earlier assignment), data loss is still found exactly, and a consumer whose read
failed or stopped early is closed rather than lent again."""

from __future__ import annotations

import subprocess
import sys
import uuid

import pytest
from pyspark_upsert_kafka.errors import DataLossError
from pyspark_upsert_kafka.kafka.clients import borrow_producer, give_back
from pyspark_upsert_kafka.kafka.pool import CLIENT_POOL
from pyspark_upsert_kafka.kafka.spec import KafkaSpec
from pyspark_upsert_kafka.read.fetch import fetch_range
from pyspark_upsert_kafka.read.range_calculator import PartitionRange

from tests.support.read_helpers import delete_before, rec, send


def spec(bootstrap: str, **more: str) -> KafkaSpec:
    # A client.id of its own: this test's consumers are not shared with other tests of the session.
    return KafkaSpec(bootstrap, (("client.id", f"pool-test-{uuid.uuid4().hex[:8]}"), *more.items()))


def read(kafka: KafkaSpec, topic: str, partition: int, start: int, end: int, fail_on_data_loss: bool = True):
    """(offset, value) of every record fetch_range yields for the range."""
    rng = PartitionRange(topic, partition, start, end)
    return [
        (o, v) for chunk in fetch_range(kafka, rng, (), fail_on_data_loss) for o, v in zip(chunk.offsets, chunk.values)
    ]


def values(topic_records: list[tuple], partition: int, start: int, end: int) -> list[tuple[int, bytes]]:
    """The expected (offset, value) pairs: records were sent to each partition in order from offset 0."""
    mine = [r for r in topic_records if r[2] == partition]
    return [(o, mine[o][1]) for o in range(start, end)]


def test_range_reads_in_one_process_share_one_consumer(new_topic, bootstrap):
    topic = new_topic(partitions=2)
    sent = [rec(i, f"p{i % 2}-{i}", partition=i % 2) for i in range(400)]
    send(bootstrap, topic, sent)
    kafka = spec(bootstrap)
    made, again = CLIENT_POOL.made["consumer"], CLIENT_POOL.lent_again["consumer"]

    assert read(kafka, topic, 0, 0, 50) == values(sent, 0, 0, 50)
    assert read(kafka, topic, 1, 10, 60) == values(sent, 1, 10, 60)
    assert read(kafka, topic, 0, 50, 200) == values(sent, 0, 50, 200)

    assert CLIENT_POOL.made["consumer"] - made == 1, "one consumer made"
    assert CLIENT_POOL.lent_again["consumer"] - again == 2, "and lent again to the next two reads"


def test_consumers_with_other_settings_are_not_shared(new_topic, bootstrap):
    topic = new_topic()
    send(bootstrap, topic, [rec(i) for i in range(10)])
    made = CLIENT_POOL.made["consumer"]
    client_id = f"pool-test-{uuid.uuid4().hex[:8]}"
    for max_bytes in ("1048576", "2097152", "1048576"):
        kafka = KafkaSpec(bootstrap, (("client.id", client_id), ("fetch.max.bytes", max_bytes)))
        assert [o for o, _ in read(kafka, topic, 0, 0, 10)] == list(range(10))
    assert CLIENT_POOL.made["consumer"] - made == 2, "one per configuration; the third read reused the first"


def test_a_reused_consumer_yields_only_its_own_range_never_what_it_fetched_before(new_topic, bootstrap):
    first, second = new_topic(partitions=2), new_topic(partitions=1)
    sent = [rec(i, f"first-{i % 2}-{i}", partition=i % 2) for i in range(4000)]
    send(bootstrap, first, sent)
    other = [rec(i, f"second-{i}", partition=0) for i in range(300)]
    send(bootstrap, second, other)
    kafka = spec(bootstrap)

    # Each read stops at its end while librdkafka has fetched far past it; the next assignment must not see
    # any of that: not the other partition's records, not this partition's from the old position, not the
    # other topic's.
    assert read(kafka, first, 0, 0, 10) == values(sent, 0, 0, 10)
    assert read(kafka, first, 1, 0, 10) == values(sent, 1, 0, 10)
    assert read(kafka, first, 1, 1500, 1510) == values(sent, 1, 1500, 1510)
    assert read(kafka, first, 1, 5, 8) == values(sent, 1, 5, 8), "back to earlier offsets of the same partition"
    assert read(kafka, second, 0, 100, 300) == values(other, 0, 100, 300), "another topic, looked up at once"
    assert read(kafka, first, 0, 1990, 2000) == values(sent, 0, 1990, 2000)


def test_a_reused_consumer_still_finds_data_loss_exactly(new_topic, bootstrap):
    topic = new_topic()
    sent = [rec(i, f"v{i}", partition=0) for i in range(100)]
    send(bootstrap, topic, sent)
    kafka = spec(bootstrap)
    assert read(kafka, topic, 0, 0, 20) == values(sent, 0, 0, 20)  # the consumer is pooled now

    delete_before(bootstrap, topic, 30)
    with pytest.raises(DataLossError, match=r"offsets \[20, 30\) of topic '.*' partition 0"):
        read(kafka, topic, 0, 20, 60)
    assert read(kafka, topic, 0, 20, 60, fail_on_data_loss=False) == values(sent, 0, 30, 60), "skips only the lost"


def test_a_consumer_whose_read_failed_or_stopped_early_is_closed_not_lent_again(new_topic, bootstrap):
    topic = new_topic()
    send(bootstrap, topic, [rec(i, f"v{i}", partition=0) for i in range(100)])
    kafka = spec(bootstrap)
    read(kafka, topic, 0, 0, 10)
    made = CLIENT_POOL.made["consumer"]

    chunks = fetch_range(kafka, PartitionRange(topic, 0, 0, 100), (), True, chunk_records=10)
    assert len(next(chunks)) == 10
    chunks.close()  # the reader stopped in the middle of its range
    read(kafka, topic, 0, 0, 10)
    assert CLIENT_POOL.made["consumer"] - made == 1, "the consumer of the unfinished read was closed"

    delete_before(bootstrap, topic, 50)
    with pytest.raises(DataLossError):
        read(kafka, topic, 0, 0, 60)
    read(kafka, topic, 0, 50, 60)
    assert CLIENT_POOL.made["consumer"] - made == 2, "the consumer of the failed read was closed"


def test_range_reads_with_an_idle_timeout_of_zero_make_a_consumer_each(new_topic, bootstrap):
    topic = new_topic()
    send(bootstrap, topic, [rec(i) for i in range(10)])
    kafka = KafkaSpec(bootstrap, (("client.id", f"pool-test-{uuid.uuid4().hex[:8]}"),), pool_idle_timeout_s=0)
    made = CLIENT_POOL.made["consumer"]
    for _ in range(3):
        assert [o for o, _ in read(kafka, topic, 0, 0, 10)] == list(range(10))
    assert CLIENT_POOL.made["consumer"] - made == 3


def test_a_process_forked_while_consumers_are_pooled_starts_cleanly(new_topic, bootstrap):
    """A child forked with Python's fork handlers (subprocess with preexec_fn, as pyspark starts its JVM) must
    not touch the parent's librdkafka clients: dropping them there crashed the child."""
    topic = new_topic()
    send(bootstrap, topic, [rec(i) for i in range(5)])
    kafka = spec(bootstrap)
    assert len(read(kafka, topic, 0, 0, 5)) == 5
    producer = borrow_producer(kafka)
    producer.client.produce(topic, b"v", b"k")
    assert producer.client.flush(30) == 0
    give_back(producer, kafka, clean=True)
    assert CLIENT_POOL.idle() >= 2
    child = subprocess.run([sys.executable, "-c", "print('started')"], preexec_fn=lambda: None, capture_output=True)
    assert (child.returncode, child.stdout.strip()) == (0, b"started")
