"""Streaming admission control (scan.max-records-per-batch / maxOffsetsPerTrigger) and the best-effort
commit of each finished micro-batch's offsets to the consumer group."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.support.read_helpers import rec, run_available_now, send, stream

ROWS = "id INT, name STRING, part INT, _change_type STRING"


@pytest.mark.parametrize("limit_option", ["scan.max-records-per-batch", "maxOffsetsPerTrigger"])
def test_available_now_with_a_limit_reads_everything_in_several_batches_shared_by_backlog(
    spark, new_topic, options, bootstrap, tmp_path, limit_option
):
    topic = new_topic(partitions=2)
    send(bootstrap, topic, [rec(i, partition=0) for i in range(8)] + [rec(100 + i, partition=1) for i in range(4)])
    opts = options(topic, {"metadata.columns": "part=partition", limit_option: "3"})
    sink = run_available_now(stream(spark, opts, ROWS), str(tmp_path / "cp"))

    sizes = [len(sink.by_batch[b]) for b in sink.batches]
    assert len(sizes) >= 4 and max(sizes) <= 3, sizes
    assert sorted(r[0] for r in sink.rows) == list(range(8)) + list(range(100, 104)), "none missing, none twice"
    # The first batch shares the 3 records by backlog (8 : 4): two from partition 0, one from partition 1.
    assert sorted(r[2] for r in sink.by_batch[sink.batches[0]]) == [0, 0, 1]


def test_each_committed_micro_batch_is_committed_to_the_consumer_group(spark, new_topic, options, bootstrap, tmp_path):
    topic, group = new_topic(partitions=2), f"g-{uuid.uuid4().hex[:8]}"
    send(bootstrap, topic, [rec(i, partition=0) for i in range(4)] + [rec(100 + i, partition=1) for i in range(2)])
    opts = options(
        topic, {"metadata.columns": "part=partition", "scan.max-records-per-batch": "3", "properties.group.id": group}
    )
    sink = run_available_now(stream(spark, opts, ROWS), str(tmp_path / "cp"))
    assert len(sink.batches) >= 2

    admin = AdminClient({"bootstrap.servers": bootstrap})
    request = [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0), TopicPartition(topic, 1)])]
    committed = admin.list_consumer_group_offsets(request)[group].result(30).topic_partitions
    # Spark confirms a batch to its source when it plans the next one, so the group holds the end of the
    # second-to-last batch: every record of the batches before the last one.
    ends = {0: 0, 1: 0}
    for b in sink.batches[:-1]:
        for row in sink.by_batch[b]:
            ends[row[2]] += 1
    assert {tp.partition: tp.offset for tp in committed} == ends
