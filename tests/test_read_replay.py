"""A micro-batch planned but not committed before a restart is replayed by Spark with the same (start, end)
offsets: it must map its records to the same Spark partitions as the first run, even when the split options
changed in between, because the exactly-once writer remembers per Spark task what it wrote."""

from __future__ import annotations

import contextlib
import json

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable
from pyspark_upsert_kafka.read.offsets import PartitionRange

from tests.read_helpers import (
    as_checkpointed,
    fail_tasks_from,
    rec,
    send,
    stream,
    stream_reader,
    uncommit_last_batch,
)
from tests.write_helpers import key_counts


def _plan_batch(reader) -> tuple[dict, dict, list]:
    start = as_checkpointed(reader.initialOffset())
    end = as_checkpointed(reader.latestOffset(start, ReadAllAvailable()))
    return start, end, reader.partitions(start, end)


@pytest.mark.parametrize(
    ("before", "after", "next_tasks"),
    [
        ({"minPartitions": "4"}, {"minPartitions": "2"}, 2),
        ({"scan.split.max-records": "7"}, {"scan.split.max-records": "20"}, 1),
        ({}, {"minPartitions": "5"}, 5),
        ({"minPartitions": "3", "scan.split.max-records": "9"}, {}, 1),
    ],
)
def test_a_replayed_range_plans_the_same_partitions_after_the_split_options_changed(
    spark, new_topic, options, bootstrap, before, after, next_tasks
):
    topic = new_topic(partitions=2)
    send(bootstrap, topic, [rec(i, partition=0) for i in range(30)] + [rec(100 + i, partition=1) for i in range(10)])
    first = stream_reader(spark, options(topic, before))
    start, end, planned = _plan_batch(first)
    assert all(isinstance(r, PartitionRange) for r in planned)
    assert sum(r.size for r in planned) == 40

    send(bootstrap, topic, [rec(200 + i, partition=0) for i in range(10)])  # the topic moved on meanwhile
    restarted = stream_reader(spark, options(topic, after))
    assert restarted.partitions(start, end) == planned, "same ranges in the same order"

    # The new options apply to the next batch (10 records of partition 0).
    later = as_checkpointed(restarted.latestOffset(end, ReadAllAvailable()))
    ranges = restarted.partitions(end, later)
    assert len(ranges) == next_tasks
    assert {r.partition for r in ranges} == {0} and (ranges[0].start, ranges[-1].end) == (30, 40)


def test_the_end_offset_records_the_split_canonically(spark, new_topic, options, bootstrap):
    topic = new_topic(partitions=2)
    send(bootstrap, topic, [rec(i, partition=i % 2) for i in range(6)])
    opts = options(topic, {"scan.split.max-records": "2", "minPartitions": "5"})
    _, end, _ = _plan_batch(stream_reader(spark, opts))
    text = json.dumps(end)
    assert text == json.dumps(_plan_batch(stream_reader(spark, opts))[1]), "equal offsets, equal text"
    assert list(end) == ["@plan", topic]
    assert end["@plan"] == {"split": {"max-records": 2, "min-partitions": 5}}
    assert list(end["@plan"]["split"]) == sorted(end["@plan"]["split"])
    assert end[topic] == {"0": 3, "1": 3}


def test_an_end_offset_without_a_recorded_plan_splits_by_the_current_options(spark, new_topic, options, bootstrap):
    """A checkpoint written before the plan was recorded stays readable."""
    topic = new_topic()
    send(bootstrap, topic, [rec(i) for i in range(12)])
    reader = stream_reader(spark, options(topic, {"minPartitions": "3"}))
    ranges = reader.partitions({topic: {"0": 0}}, {topic: {"0": 12}})
    assert [(r.start, r.end) for r in ranges] == [(0, 4), (4, 8), (8, 12)]


def test_no_new_record_leaves_the_offset_unchanged_whatever_the_options(spark, new_topic, options, bootstrap):
    """Spark runs a micro-batch whenever the offset text changes: a checkpoint of other options (or of an
    older version) must not cause an empty batch."""
    topic = new_topic()
    send(bootstrap, topic, [rec(i) for i in range(3)])
    _, end, _ = _plan_batch(stream_reader(spark, options(topic, {"minPartitions": "2"})))
    restarted = stream_reader(spark, options(topic, {"scan.split.max-records": "9"}))
    assert json.dumps(restarted.latestOffset(end, ReadAllAvailable())) == json.dumps(end)
    old_form = {topic: {"0": 3}}
    assert json.dumps(restarted.latestOffset(old_form, ReadAllAvailable())) == json.dumps(old_form)


def test_exactly_once_copy_restarted_mid_batch_with_other_split_options_writes_every_record_once(
    spark, new_topic, options, bootstrap, tmp_path
):
    """The reported case: a stream -> upsert-kafka exactly-once query dies in the middle of a micro-batch
    with minPartitions=4 (tasks 0 and 1 committed, 2 and 3 not) and restarts with minPartitions=2."""
    source, target = new_topic(), new_topic(partitions=2)
    n = 2000
    send(bootstrap, source, [rec(i, f"n{i}") for i in range(n)])
    checkpoint, flag = str(tmp_path / "cp"), tmp_path / "fail"
    flag.touch()
    sink = options(target, {"sink.delivery-guarantee": "exactly-once", "sink.transactional-id-prefix": target})

    def run(min_partitions: str):
        changes = stream(spark, options(source, {"minPartitions": min_partitions}))
        failing = changes.withColumn("name", fail_tasks_from(bootstrap, target, target, 2, str(flag))("name"))
        query = (
            failing.writeStream.format("upsert-kafka")
            .options(**sink)
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )
        try:
            with contextlib.suppress(Exception):  # the first run is meant to fail: its exception is checked below
                query.awaitTermination(180)
        finally:
            query.stop()
        return query

    failed = run("4")
    assert failed.exception() is not None and "injected failure in task" in str(failed.exception())
    written = key_counts(bootstrap, target)
    assert 0 < len(written) < n, "the first run must die with part of the batch written"

    flag.unlink()
    resumed = run("2")
    assert resumed.exception() is None, resumed.exception()
    counts = key_counts(bootstrap, target)
    assert len(counts) == n, f"{n - len(counts)} of {n} keys missing"
    assert set(counts.values()) == {1}, "some record was written twice"


def test_a_replay_after_a_commit_was_lost_writes_nothing_twice_with_more_partitions(
    spark, new_topic, options, bootstrap, tmp_path
):
    """The sink committed every task of the last batch, Spark did not log it: the restart (now with
    minPartitions=4 instead of 2) replays the batch, and every task of it must find its earlier write."""
    source, target = new_topic(), new_topic()
    n = 400
    send(bootstrap, source, [rec(i, f"n{i}") for i in range(n)])
    checkpoint = str(tmp_path / "cp")
    sink = options(target, {"sink.delivery-guarantee": "exactly-once", "sink.transactional-id-prefix": target})

    def run(min_partitions: str) -> None:
        query = (
            stream(spark, options(source, {"minPartitions": min_partitions}))
            .writeStream.format("upsert-kafka")
            .options(**sink)
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(180)
        assert query.exception() is None, query.exception()

    run("2")
    assert uncommit_last_batch(checkpoint) == 0
    run("4")
    assert key_counts(bootstrap, target) == {i: 1 for i in range(n)}
