"""Offsets that are not simply consecutive: transaction gaps and aborted records (normal), and offsets
deleted from the log before they were read (data loss: an error, or skipped when asked)."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions

from tests.read_helpers import rec, rows_of, run_available_now, send, stream

ROWS = "id INT, name STRING, off BIGINT, _change_type STRING"


def _transactions(bootstrap: str, topic: str, batches: list[tuple[list[int], bool]]) -> None:
    """Each (ids, commit) is one transaction, committed or aborted."""
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tx-{uuid.uuid4().hex[:8]}"})
    producer.init_transactions(30)
    for ids, commit in batches:
        producer.begin_transaction()
        for i in ids:
            key, value, _, _ = rec(i, "aborted" if not commit else "v")
            producer.produce(topic, value, key, partition=0)
        producer.flush(30)
        (producer.commit_transaction if commit else producer.abort_transaction)(30)


def _delete_before(bootstrap: str, topic: str, offset: int, partition: int = 0) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    where = TopicPartition(topic, partition, offset)
    admin.delete_records([where])[where].result(30)


def _add_partition(bootstrap: str, topic: str) -> None:
    """Grow the topic by one partition and wait until its metadata shows it."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    count = len(admin.list_topics(topic, timeout=10).topics[topic].partitions)
    admin.create_partitions([NewPartitions(topic, count + 1)])[topic].result(30)
    deadline = time.monotonic() + 30
    while len(admin.list_topics(topic, timeout=10).topics[topic].partitions) <= count:
        assert time.monotonic() < deadline, "the new partition did not appear"
        time.sleep(0.1)


def _opts(options, topic: str, more: dict | None = None) -> dict:
    return options(topic, {"read.mode": "changelog", "metadata.columns": "off=offset"} | (more or {}))


def test_aborted_transactions_never_surface_and_offset_gaps_are_read_past(spark, new_topic, options, bootstrap):
    topic = new_topic()
    _transactions(bootstrap, topic, [([1, 2], True), ([3, 4], False), ([5], True)])
    rows = rows_of(spark, _opts(options, topic), ROWS)
    assert [(r[0], r[1]) for r in rows] == [(1, "v"), (2, "v"), (5, "v")]
    offsets = [r[2] for r in rows]
    assert offsets[:2] == [0, 1] and offsets[2] > 3, "commit markers and aborted records leave gaps"


def test_stream_over_transactions_ends_at_the_trailing_commit_marker(spark, new_topic, options, bootstrap, tmp_path):
    topic = new_topic()
    _transactions(bootstrap, topic, [([1, 2], True), ([3], False), ([4, 5], True)])
    opts = _opts(options, topic, {"scan.max-records-per-batch": "2"})
    sink = run_available_now(stream(spark, opts, ROWS), str(tmp_path / "cp"))
    assert sorted(r[0] for r in sink.rows) == [1, 2, 4, 5]


@pytest.mark.parametrize(
    ("start", "first"),
    [
        ({"scan.startup.mode": "specific-offsets", "scan.startup.specific-offsets": "partition:0,offset:0"}, 0),
        ({"startingOffsets": '{TOPIC: {"0": 1}}'}, 1),
    ],
)
def test_start_below_the_log_start_fails_naming_topic_partition_and_missing_range(
    spark, new_topic, options, bootstrap, start, first
):
    topic = new_topic()
    send(bootstrap, topic, [rec(i) for i in range(5)])
    _delete_before(bootstrap, topic, 3)
    opts = _opts(options, topic, {k: v.replace("TOPIC", f'"{topic}"') for k, v in start.items()})
    with pytest.raises(
        Exception,
        match=rf"offsets \[{first}, 3\) of topic '{topic}' partition 0 are no longer in Kafka.*"
        r"'scan\.fail-on-data-loss'",
    ):
        rows_of(spark, opts, ROWS)


@pytest.mark.parametrize("flag", ["scan.fail-on-data-loss", "failOnDataLoss"])
def test_fail_on_data_loss_false_skips_the_deleted_offsets(spark, new_topic, options, bootstrap, flag):
    topic = new_topic()
    send(bootstrap, topic, [rec(i) for i in range(5)])
    _delete_before(bootstrap, topic, 3)
    more = {"scan.startup.mode": "specific-offsets", "scan.startup.specific-offsets": "partition:0,offset:0"}
    rows = rows_of(spark, _opts(options, topic, more | {flag: "false"}), ROWS)
    assert [(r[0], r[2]) for r in rows] == [(3, 3), (4, 4)]


def test_stream_resuming_below_the_log_start_fails_naming_the_missing_range(
    spark, new_topic, options, bootstrap, tmp_path
):
    topic = new_topic()
    send(bootstrap, topic, [rec(i) for i in range(2)])
    checkpoint = str(tmp_path / "cp")
    assert len(run_available_now(stream(spark, _opts(options, topic), ROWS), checkpoint).rows) == 2
    send(bootstrap, topic, [rec(i) for i in range(2, 6)])
    _delete_before(bootstrap, topic, 4)  # the checkpoint stands at offset 2

    with pytest.raises(Exception, match=rf"offsets \[2, 4\) of topic '{topic}' partition 0 are no longer in Kafka"):
        run_available_now(stream(spark, _opts(options, topic), ROWS), checkpoint)
    resumed = run_available_now(stream(spark, _opts(options, topic, {"failOnDataLoss": "false"}), ROWS), checkpoint)
    assert [(r[0], r[2]) for r in resumed.rows] == [(4, 4), (5, 5)]


def test_a_new_partition_whose_first_records_were_deleted_is_data_loss(spark, new_topic, options, bootstrap, tmp_path):
    """A partition added while the query runs is read from offset 0 (as Spark's Kafka source does): records
    deleted before the query saw them are data loss, not a silent start further on."""
    topic = new_topic()
    send(bootstrap, topic, [rec(i) for i in range(2)])
    checkpoint = str(tmp_path / "cp")
    assert len(run_available_now(stream(spark, _opts(options, topic), ROWS), checkpoint).rows) == 2
    _add_partition(bootstrap, topic)
    send(bootstrap, topic, [rec(i, partition=1) for i in range(10, 15)])
    _delete_before(bootstrap, topic, 3, partition=1)

    with pytest.raises(Exception, match=rf"offsets \[0, 3\) of topic '{topic}' partition 1 are no longer in Kafka"):
        run_available_now(stream(spark, _opts(options, topic), ROWS), checkpoint)
    resumed = run_available_now(stream(spark, _opts(options, topic, {"failOnDataLoss": "false"}), ROWS), checkpoint)
    assert [(r[0], r[2]) for r in resumed.rows] == [(13, 3), (14, 4)]


def test_a_new_partition_is_read_from_offset_0(spark, new_topic, options, bootstrap, tmp_path):
    topic = new_topic()
    send(bootstrap, topic, [rec(1)])
    checkpoint = str(tmp_path / "cp")
    assert len(run_available_now(stream(spark, _opts(options, topic), ROWS), checkpoint).rows) == 1
    _add_partition(bootstrap, topic)
    send(bootstrap, topic, [rec(i, partition=1) for i in range(10, 13)] + [rec(2, partition=0)])
    resumed = run_available_now(stream(spark, _opts(options, topic), ROWS), checkpoint)
    assert sorted((r[0], r[2]) for r in resumed.rows) == [(2, 1), (10, 0), (11, 1), (12, 2)]
