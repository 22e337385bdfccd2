"""scan.coalesce.max-records in a running stream: a micro-batch reads its small partition ranges in one Spark task
(a task per partition made the fixed cost of a micro-batch, and so its latency, grow with the partitions).
The grouping is recorded in the batch's end offset, so a replay reads the same records in the same tasks; split
options keep a task per range. Bounded reads (batch, Trigger.AvailableNow) group by records:
test_read_planning.py."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F
from pyspark_upsert_kafka.read.range_calculator import PartitionRange, RangeGroup, coalesce_ranges
from pyspark_upsert_kafka.spark_internals import ReadAllAvailable

from tests.support.read_helpers import (
    Collector,
    as_checkpointed,
    delete_before,
    rec,
    send,
    start_collecting,
    stream,
    stream_reader,
    wait_for,
)


def ranges(*sizes: int) -> list[PartitionRange]:
    return [PartitionRange("t", p, 100, 100 + size) for p, size in enumerate(sizes)]


def shape(tasks) -> list[list[int]]:
    return [[r.partition for r in t.ranges] if isinstance(t, RangeGroup) else [t.partition] for t in tasks]


@pytest.mark.parametrize(
    ("sizes", "max_records", "expected"),
    [
        ((5, 5, 5, 5), 20, [[0, 1, 2, 3]]),
        ((5, 5, 5, 5), 10, [[0, 1], [2, 3]]),
        ((5, 30, 5, 5), 10, [[0], [1], [2, 3]]),  # a range above the bound is a task of its own
        ((10, 1, 1), 10, [[0], [1, 2]]),
        ((5, 5), None, [[0], [1]]),
        ((5, 5), 0, [[0], [1]]),
    ],
)
def test_consecutive_ranges_are_packed_into_tasks_of_at_most_max_records(sizes, max_records, expected):
    tasks = coalesce_ranges(ranges(*sizes), max_records)
    assert shape(tasks) == expected
    assert [r for t in tasks for r in (t.ranges if isinstance(t, RangeGroup) else [t])] == ranges(*sizes)
    assert all(isinstance(t, PartitionRange) for t in tasks if len(shape([t])[0]) == 1), "one range: as before"


def _plan(reader, start: dict) -> tuple[dict, list]:
    end = as_checkpointed(reader.latestOffset(start, ReadAllAvailable()))
    return end, reader.partitions(start, end)


def four_partitions(bootstrap: str, topic: str, per_partition: int = 5) -> None:
    send(bootstrap, topic, [rec(10 * p + i, partition=p) for p in range(4) for i in range(per_partition)])


def test_a_micro_batchs_small_ranges_are_one_task_and_its_end_offset_says_so(spark, new_topic, options, bootstrap):
    topic = new_topic(partitions=4)
    four_partitions(bootstrap, topic)
    reader = stream_reader(options(topic))
    end, tasks = _plan(reader, as_checkpointed(reader.initialOffset()))
    assert shape(tasks) == [[0, 1, 2, 3]]
    assert end["@plan"]["split"] == {"coalesce": 20000}

    small = stream_reader(options(topic, {"scan.coalesce.max-records": "10"}))
    assert shape(_plan(small, as_checkpointed(small.initialOffset()))[1]) == [[0, 1], [2, 3]]


@pytest.mark.parametrize(
    "split", [{"scan.coalesce.max-records": "0"}, {"minPartitions": "2"}, {"scan.split.max-records": "100"}]
)
def test_no_coalescing_when_turned_off_or_ranges_are_split(spark, new_topic, options, bootstrap, split):
    topic = new_topic(partitions=4)
    four_partitions(bootstrap, topic)
    reader = stream_reader(options(topic, split))
    end, tasks = _plan(reader, as_checkpointed(reader.initialOffset()))
    assert all(isinstance(t, PartitionRange) for t in tasks) and len(tasks) >= 4
    assert "coalesce" not in end["@plan"]["split"]


def test_trigger_available_now_reads_a_task_per_range(spark, new_topic, options, bootstrap):
    topic = new_topic(partitions=4)
    four_partitions(bootstrap, topic)
    reader = stream_reader(options(topic))
    reader.prepareForTriggerAvailableNow()
    _, tasks = _plan(reader, as_checkpointed(reader.initialOffset()))
    assert shape(tasks) == [[0], [1], [2], [3]]


def test_a_replay_keeps_the_grouping_when_records_were_deleted_meanwhile(spark, new_topic, options, bootstrap):
    topic = new_topic(partitions=4)
    four_partitions(bootstrap, topic, per_partition=10)
    opts = options(topic, {"scan.coalesce.max-records": "20", "scan.fail-on-data-loss": "false"})
    start = as_checkpointed(stream_reader(opts).initialOffset())
    end, planned = _plan(stream_reader(opts), start)
    assert shape(planned) == [[0, 1], [2, 3]]

    delete_before(bootstrap, topic, 8, partition=0)  # retention, between the first run and the replay
    replayed = stream_reader(options(topic, {"scan.fail-on-data-loss": "false"})).partitions(start, end)
    assert shape(replayed) == [[0, 1], [2, 3]], "the records that survive stay in their task"
    assert [(r.start, r.end) for r in replayed[0].ranges] == [(8, 10), (0, 10)]
    assert replayed[1] == planned[1]


def test_a_running_stream_reads_each_small_micro_batch_in_one_task(spark, new_topic, options, bootstrap, tmp_path):
    topic = new_topic(partitions=4)
    task = F.udf(lambda _: __import__("pyspark").TaskContext.get().partitionId(), "int")
    sink = Collector()
    query = start_collecting(stream(spark, options(topic)).withColumn("task", task("id")), str(tmp_path / "cp"), sink)
    try:
        for r in range(3):
            send(bootstrap, topic, [rec(100 * r + 10 * p + i, partition=p) for p in range(4) for i in range(3)])
            wait_for(lambda r=r: len(sink.rows) >= 12 * (r + 1), f"round {r}")
    finally:
        query.stop()
    sent = [100 * r + 10 * p + i for r in range(3) for p in range(4) for i in range(3)]
    assert sorted(row[0] for row in sink.rows) == sorted(sent)
    for batch in sink.batches:
        assert {row[-1] for row in sink.by_batch[batch]} <= {0}, f"micro-batch {batch} ran in one task"
    # Each partition's records keep their order within the task.
    for p in range(4):
        ids = [row[0] for row in sink.rows if (row[0] % 100) // 10 == p]
        assert ids == sorted(ids)
