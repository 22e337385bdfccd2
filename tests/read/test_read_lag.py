"""`lag()`: per partition, the latest offset, a streaming query's position (from its checkpoint) or a consumer
group's (its committed offsets), and the difference; one clear error for each way the call can be wrong."""

from __future__ import annotations

import json

import pytest
from confluent_kafka import Consumer, TopicPartition
from pyspark_upsert_kafka import OptionError, TopicError, lag

from tests.support.read_helpers import rec, run_available_now, send, stream

ROWS = "id INT, name STRING, _change_type STRING"


def _rows(df) -> list[tuple]:
    assert df.columns == ["topic", "partition", "latest_offset", "position", "lag"]
    return [tuple(r) for r in df.collect()]


@pytest.mark.compat  # pyspark 4.0/4.1 report no latestOffset: lag() is how to see it there
def test_lag_from_a_checkpoint_is_what_was_produced_after_the_stream_stopped(
    spark, new_topic, options, bootstrap, tmp_path
):
    topic, checkpoint = new_topic(partitions=3), str(tmp_path / "cp")
    opts = options(topic)
    send(bootstrap, topic, [rec(i, partition=i % 3) for i in range(9)])  # 3 per partition
    sink = run_available_now(stream(spark, opts, ROWS), checkpoint)
    assert len(sink.rows) == 9
    assert _rows(lag(spark, opts, checkpoint=checkpoint)) == [(topic, p, 3, 3, 0) for p in range(3)]

    after = {0: 4, 1: 0, 2: 1}
    send(bootstrap, topic, [rec(100 + i, partition=p) for p, n in after.items() for i in range(n)])
    assert _rows(lag(spark, opts, checkpoint=f"file://{checkpoint}")) == [
        (topic, p, 3 + n, 3, n) for p, n in after.items()
    ]


def test_lag_from_a_checkpoint_covers_only_the_assigned_partitions(spark, new_topic, bootstrap, tmp_path):
    topic, checkpoint = new_topic(partitions=2), str(tmp_path / "cp")
    opts = {"properties.bootstrap.servers": bootstrap, "key.fields": "id", "assign": json.dumps({topic: [1]})}
    send(bootstrap, topic, [rec(1, partition=0), rec(2, partition=1)])
    run_available_now(stream(spark, opts, ROWS), checkpoint)
    send(bootstrap, topic, [rec(3, partition=1), rec(4, partition=1), rec(5, partition=0)])
    assert _rows(lag(spark, opts, checkpoint=checkpoint)) == [(topic, 1, 3, 1, 2)]


def test_lag_of_a_group_from_its_committed_offsets(spark, new_topic, options, bootstrap):
    topic = new_topic(partitions=3)
    group = f"lag-{topic}"
    send(bootstrap, topic, [rec(i, partition=i % 3) for i in range(12)])  # 4 per partition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, 1), TopicPartition(topic, 2, 4)], asynchronous=False)
    finally:
        consumer.close()
    assert _rows(lag(spark, options(topic), group=group)) == [
        (topic, 0, 4, 1, 3),
        (topic, 1, 4, None, None),  # nothing committed: no position
        (topic, 2, 4, 4, 0),
    ]


def test_lag_of_a_stream_committing_to_its_group(spark, new_topic, options, bootstrap, tmp_path):
    """A stream with properties.group.id commits each batch's end when it plans the next: two AvailableNow runs
    leave the first run's end committed."""
    topic = new_topic(partitions=2)
    group = f"lag-{topic}"
    opts = options(topic, {"properties.group.id": group})
    send(bootstrap, topic, [rec(i, partition=i % 2) for i in range(4)])
    run_available_now(stream(spark, opts, ROWS), str(tmp_path / "cp"))
    send(bootstrap, topic, [rec(10, partition=0)])
    run_available_now(stream(spark, opts, ROWS), str(tmp_path / "cp"))
    assert _rows(lag(spark, opts, group=group)) == [(topic, 0, 3, 2, 1), (topic, 1, 2, 2, 0)]


@pytest.mark.parametrize("given", [{}, {"checkpoint": "/tmp/x", "group": "g"}])
def test_exactly_one_of_checkpoint_and_group(spark, options, given):
    with pytest.raises(OptionError, match=r"exactly one of checkpoint= .* and group="):
        lag(spark, options("t"), **given)


def test_a_checkpoint_that_does_not_exist(spark, new_topic, options, tmp_path):
    with pytest.raises(OptionError, match=r"checkpoint '.*nowhere' does not exist: give the checkpointLocation"):
        lag(spark, options(new_topic()), checkpoint=str(tmp_path / "nowhere"))


def test_a_directory_that_is_no_checkpoint(spark, new_topic, options, tmp_path):
    with pytest.raises(
        OptionError, match=r"holds no micro-batch offsets .* not a streaming query's checkpointLocation"
    ):
        lag(spark, options(new_topic()), checkpoint=str(tmp_path))


def test_a_checkpoint_of_another_source_is_not_ours(spark, new_topic, options, tmp_path):
    checkpoint = str(tmp_path / "rate")
    query = (
        (spark.readStream.format("rate").load().writeStream.format("noop").option("checkpointLocation", checkpoint))
        .trigger(once=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None
    with pytest.raises(OptionError, match=r"was not written by an upsert-kafka stream reader"):
        lag(spark, options(new_topic()), checkpoint=checkpoint)


def test_a_checkpoint_of_other_topics_names_them(spark, new_topic, options, bootstrap, tmp_path):
    read, other, checkpoint = new_topic(), new_topic(), str(tmp_path / "cp")
    send(bootstrap, read, [rec(1)])
    run_available_now(stream(spark, options(read), ROWS), checkpoint)
    with pytest.raises(OptionError, match=rf"reads {read}, none of the topics these options read \({other}\)"):
        lag(spark, options(other), checkpoint=checkpoint)


def test_a_checkpoint_elsewhere_than_a_local_file_system(spark, options):
    with pytest.raises(OptionError, match=r"not on a local file system.*give group= instead"):
        lag(spark, options("t"), checkpoint="s3a://bucket/cp")


def test_a_topic_that_does_not_exist(spark, options, tmp_path):
    with pytest.raises(TopicError, match=r"topic 'no-such-topic-for-lag' does not exist"):
        lag(spark, options("no-such-topic-for-lag"), group="g")
