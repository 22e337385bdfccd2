"""A micro-batch planned but not committed before a restart is replayed by Spark with the same (start, end)
offsets: it must map its records to the same Spark partitions as the first run, even when the split options
changed in between or records were deleted (failOnDataLoss=false), because the exactly-once writer remembers
per Spark task what it wrote. Batch 0, whose start Spark works out again, reads from where it was planned."""

from __future__ import annotations

import contextlib
import json
import uuid

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient
from pyspark_upsert_kafka.read import offsets
from pyspark_upsert_kafka.read.range_calculator import PartitionRange, RangeGroup
from pyspark_upsert_kafka.spark_internals import ReadAllAvailable

from tests.support.checkpoints import uncommit
from tests.support.read_helpers import (
    as_checkpointed,
    delete_before,
    fail_tasks,
    rec,
    send,
    stream,
    stream_reader,
)
from tests.support.write_helpers import key_counts


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
        ({}, {"scan.coalesce.max-records": "0"}, 1),  # both ranges in one task by default, then a task each
        ({"scan.coalesce.max-records": "0"}, {"scan.coalesce.max-records": "100"}, 1),
    ],
)
def test_a_replayed_range_plans_the_same_partitions_after_the_split_options_changed(
    spark, new_topic, options, bootstrap, before, after, next_tasks
):
    topic = new_topic(partitions=2)
    send(bootstrap, topic, [rec(i, partition=0) for i in range(30)] + [rec(100 + i, partition=1) for i in range(10)])
    first = stream_reader(options(topic, before))
    start, end, planned = _plan_batch(first)
    assert all(isinstance(r, PartitionRange | RangeGroup) for r in planned)
    assert sum(r.size for r in planned) == 40

    send(bootstrap, topic, [rec(200 + i, partition=0) for i in range(10)])  # the topic moved on meanwhile
    restarted = stream_reader(options(topic, after))
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
    _, end, _ = _plan_batch(stream_reader(opts))

    def text(offset: dict) -> str:  # without the marks of lost deletes, which hold the planning's wall clock
        return json.dumps({k: v for k, v in offset.items() if k != "@uncleaned"})

    assert text(end) == text(_plan_batch(stream_reader(opts))[1]), "equal offsets, equal text"
    assert list(end) == ["@format", "@plan", "@uncleaned", topic]
    # batch 0 also records its start (Spark keeps none for it)
    assert end["@plan"] == {"split": {"max-records": 2, "min-partitions": 5}, "start": {topic: {"0": 0, "1": 0}}}
    assert list(end["@plan"]) == sorted(end["@plan"])
    assert list(end["@plan"]["split"]) == sorted(end["@plan"]["split"])
    assert end[topic] == {"0": 3, "1": 3}


def test_an_end_offset_without_a_recorded_plan_splits_by_the_current_options(spark, new_topic, options, bootstrap):
    """A checkpoint written before the plan was recorded stays readable."""
    topic = new_topic()
    send(bootstrap, topic, [rec(i) for i in range(12)])
    reader = stream_reader(options(topic, {"minPartitions": "3"}))
    ranges = reader.partitions({topic: {"0": 0}}, {topic: {"0": 12}})
    assert [(r.start, r.end) for r in ranges] == [(0, 4), (4, 8), (8, 12)]


def test_no_new_record_leaves_the_offset_unchanged_whatever_the_options(spark, new_topic, options, bootstrap):
    """Spark runs a micro-batch whenever the offset text changes: a checkpoint of other options (or of an
    older version) must not cause an empty batch."""
    topic = new_topic()
    send(bootstrap, topic, [rec(i) for i in range(3)])
    _, end, _ = _plan_batch(stream_reader(options(topic, {"minPartitions": "2"})))
    restarted = stream_reader(options(topic, {"scan.split.max-records": "9"}))
    assert json.dumps(restarted.latestOffset(end, ReadAllAvailable())) == json.dumps(end)
    old_form = {topic: {"0": 3}}
    assert json.dumps(restarted.latestOffset(old_form, ReadAllAvailable())) == json.dumps(old_form)


def _copy_exactly_once(spark, options, bootstrap, source: str, target: str, checkpoint: str, read: dict, flag):
    """A stream -> upsert-kafka exactly-once copy with Trigger.AvailableNow: while the file `flag` exists, tasks 2
    and 3 of a micro-batch fail once tasks 0 and 1 have committed. Returns the stopped query."""
    sink = options(target, {"sink.delivery-guarantee": "exactly-once", "sink.transactional-id-prefix": target})
    changes = stream(spark, options(source, read))
    failing = changes.withColumn("name", fail_tasks(bootstrap, target, target, (2, 3), (0, 1), str(flag))("name"))
    query = (
        failing.writeStream.format("upsert-kafka")
        .options(**sink)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    try:
        with contextlib.suppress(Exception):  # a run may be meant to fail: callers check query.exception()
            query.awaitTermination(180)
    finally:
        query.stop()
    return query


def _dies_mid_batch(query, bootstrap: str, target: str, n: int) -> None:
    assert query.exception() is not None and "injected failure in task" in str(query.exception())
    written = key_counts(bootstrap, target)
    assert 0 < len(written) < n, "the first run must die with part of the batch written"


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

    failed = _copy_exactly_once(spark, options, bootstrap, source, target, checkpoint, {"minPartitions": "4"}, flag)
    _dies_mid_batch(failed, bootstrap, target, n)

    flag.unlink()
    resumed = _copy_exactly_once(spark, options, bootstrap, source, target, checkpoint, {"minPartitions": "2"}, flag)
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
    assert uncommit(checkpoint) == 0
    run("4")
    assert key_counts(bootstrap, target) == {i: 1 for i in range(n)}


# -- batch 0's start ------------------------------------------------------------------------------
# Spark stores no start for batch 0 of a Python source: it calls initialOffset() again when it runs the batch
# (MicroBatchExecution.runBatch: `current.getOrElse(stream.initialOffset)`) and when it replays it after a
# restart. By then `latest`, a consumer group's offsets or the log start may have moved.


def _move_on(kind: str, bootstrap: str, topic: str, group: str) -> None:
    if kind == "latest":
        send(bootstrap, topic, [rec(i) for i in range(10, 13)])
    else:
        _commit_group(bootstrap, group, topic, 7)


def _commit_group(bootstrap: str, group: str, topic: str, offset: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    tps = [TopicPartition(topic, 0, offset)]
    for future in admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, tps)]).values():
        future.result(30)


@pytest.mark.parametrize("kind", ["latest", "group-offsets"])
def test_batch_0_reads_from_the_start_it_was_planned_with_when_run_and_when_replayed(
    spark, new_topic, options, bootstrap, kind
):
    topic, group = new_topic(), f"g-{uuid.uuid4().hex[:8]}"
    send(bootstrap, topic, [rec(i) for i in range(5)])
    _commit_group(bootstrap, group, topic, 5)
    start_at = {"startingOffsets": "latest"} if kind == "latest" else {"scan.startup.mode": "group-offsets"}
    opts = options(topic, start_at | {"properties.group.id": group})
    first = stream_reader(opts)
    start = as_checkpointed(first.initialOffset())
    assert offsets.StreamOffset.from_json(start).offsets == {topic: {0: 5}}
    send(bootstrap, topic, [rec(i) for i in range(5, 10)])  # after the query started, before batch 0 was planned
    end = as_checkpointed(first.latestOffset(start, ReadAllAvailable()))
    assert offsets.StreamOffset.from_json(end).offsets == {topic: {0: 10}}

    planned = [PartitionRange(topic, 0, 5, 10)]
    _move_on(kind, bootstrap, topic, group)
    assert first.partitions(as_checkpointed(first.initialOffset()), end) == planned, "as Spark runs batch 0"
    _move_on(kind, bootstrap, topic, group)
    restarted = stream_reader(opts)
    assert restarted.partitions(as_checkpointed(restarted.initialOffset()), end) == planned, "and replays it"
    if kind == "latest":  # the next batch goes on from batch 0's end
        later = as_checkpointed(restarted.latestOffset(end, ReadAllAvailable()))
        assert [(r.start, r.end) for r in restarted.partitions(end, later)] == [(10, 16)]


def test_batch_0_planned_with_nothing_to_read_records_its_start(spark, new_topic, options, bootstrap):
    """An empty batch 0 runs anyway (Spark runs the first batch whatever its offsets): its replay reads nothing
    even when records arrived since, and the next batch reads them."""
    topic = new_topic()
    send(bootstrap, topic, [rec(i) for i in range(3)])
    opts = options(topic, {"startingOffsets": "latest"})
    first = stream_reader(opts)
    start = as_checkpointed(first.initialOffset())
    end = as_checkpointed(first.latestOffset(start, ReadAllAvailable()))
    assert end["@plan"]["start"] == {topic: {"0": 3}} and end[topic] == {"0": 3}
    send(bootstrap, topic, [rec(i) for i in range(3, 6)])
    restarted = stream_reader(opts)
    assert restarted.partitions(as_checkpointed(restarted.initialOffset()), end) == []
    later = as_checkpointed(restarted.latestOffset(end, ReadAllAvailable()))
    assert [(r.start, r.end) for r in restarted.partitions(end, later)] == [(3, 6)]
    assert json.dumps(restarted.latestOffset(later, ReadAllAvailable())) == json.dumps(later), "no empty batch"


# -- the split survives deletion ------------------------------------------------------------------


def test_a_replay_after_records_were_deleted_keeps_every_surviving_record_in_its_task(
    spark, new_topic, options, bootstrap
):
    """failOnDataLoss=false: records deleted between the first run and the replay are skipped, and the rest stay
    in the task that had them (the exactly-once writer's markers are per task): split first, then clip."""
    topic = new_topic()
    send(bootstrap, topic, [rec(i) for i in range(40)])
    opts = options(topic, {"minPartitions": "4", "failOnDataLoss": "false"})
    start, end, planned = _plan_batch(stream_reader(opts))
    assert [(r.start, r.end) for r in planned] == [(0, 10), (10, 20), (20, 30), (30, 40)]
    delete_before(bootstrap, topic, 15)
    replayed = stream_reader(opts).partitions(start, end)
    assert [(r.start, r.end) for r in replayed] == [(10, 10), (15, 20), (20, 30), (30, 40)]


def test_exactly_once_copy_replayed_after_records_were_deleted_writes_every_surviving_record_once(
    spark, new_topic, options, bootstrap, tmp_path
):
    """Tasks 0 and 1 of a micro-batch committed, 2 and 3 died; then retention deleted the records of tasks 0 and 1
    and some of task 2. The restart (failOnDataLoss=false) must give tasks 2 and 3 their records again."""
    source, target = new_topic(), new_topic(partitions=2)
    n = 2000
    send(bootstrap, source, [rec(i, f"n{i}") for i in range(n)])
    checkpoint, flag = str(tmp_path / "cp"), tmp_path / "fail"
    flag.touch()
    read = {"minPartitions": "4", "failOnDataLoss": "false"}

    failed = _copy_exactly_once(spark, options, bootstrap, source, target, checkpoint, read, flag)
    _dies_mid_batch(failed, bootstrap, target, n)
    assert key_counts(bootstrap, target) == {i: 1 for i in range(1000)}, "tasks 0 and 1: offsets [0, 1000)"

    delete_before(bootstrap, source, 1200)
    flag.unlink()
    resumed = _copy_exactly_once(spark, options, bootstrap, source, target, checkpoint, read, flag)
    assert resumed.exception() is None, resumed.exception()
    assert key_counts(bootstrap, target) == {i: 1 for i in [*range(1000), *range(1200, n)]}


def test_a_batch_planned_after_records_were_deleted_splits_only_what_is_left(spark, new_topic, options, bootstrap):
    """failOnDataLoss=false: a batch planned from a stored start below the log start is planned (and split) from
    the log's first offset, recorded with it, rather than split over deleted records into empty tasks."""
    topic = new_topic()
    send(bootstrap, topic, [rec(i) for i in range(20)])
    reader = stream_reader(options(topic, {"minPartitions": "2", "failOnDataLoss": "false"}))
    stored = {topic: {"0": 0}}  # the end offset of the previous batch, in the checkpoint
    delete_before(bootstrap, topic, 12)
    end = as_checkpointed(reader.latestOffset(stored, ReadAllAvailable()))
    assert end["@plan"]["start"] == {topic: {"0": 12}} and end[topic] == {"0": 20}
    assert [(r.start, r.end) for r in reader.partitions(stored, end)] == [(12, 16), (16, 20)]
    restarted = stream_reader(options(topic, {"failOnDataLoss": "false"}))
    assert [(r.start, r.end) for r in restarted.partitions(stored, end)] == [(12, 16), (16, 20)], "replayed"
