"""Option `assign` (Spark's): only the listed partitions are read, in batch and streaming; a stream never adds a
partition to them; offsets and watermarks cover them alone; a partition or topic that does not exist fails
naming the option."""

from __future__ import annotations

import json
from datetime import UTC

import pytest
from pyspark_upsert_kafka.spark_internals import ReadAllAvailable

from tests.support.checkpoints import planned_batches, planned_offsets
from tests.support.kafka_io import add_partition
from tests.support.read_helpers import (
    Collector,
    rec,
    recent_minute,
    rows_of,
    send,
    start_collecting,
    stream,
    stream_reader,
    wait_for,
)
from tests.support.write_helpers import write

T0 = recent_minute()
ROWS = "id INT, name STRING, part INT"


def _opts(bootstrap: str, assign: dict, more: dict | None = None) -> dict:
    base = {"properties.bootstrap.servers": bootstrap, "key.fields": "id", "metadata.columns": "part=partition"}
    return base | {"assign": json.dumps(assign)} | (more or {})


def test_batch_read_takes_only_the_assigned_partitions_of_each_topic(spark, new_topic, bootstrap):
    a, b = new_topic(partitions=3), new_topic(partitions=2)
    send(bootstrap, a, [rec(i, partition=i % 3) for i in range(9)])
    send(bootstrap, b, [rec(100 + i, partition=i % 2) for i in range(4)])
    opts = _opts(bootstrap, {a: [2, 0], b: [1]}, {"metadata.columns": "part=partition, src=topic"})

    rows = rows_of(spark, opts | {"read.mode": "changelog"}, ROWS + ", src STRING, _change_type STRING")
    got = sorted((r[3], r[2], r[0]) for r in rows)
    assert got == sorted([(a, p, i) for i in range(9) for p in [i % 3] if p in (0, 2)] + [(b, 1, 101), (b, 1, 103)])


def test_table_read_of_some_partitions_is_exact_for_the_keys_they_hold(spark, new_topic, options, bootstrap):
    """Writes partition by key, so a key's every change is in one partition: the table of a subset of partitions
    is the whole table's rows of those partitions, deletes and updates included."""
    topic = new_topic(partitions=3)
    opts = options(topic)
    changes = "id INT, name STRING, _change_type STRING"
    write(spark, opts, [(i, "v1", "upsert") for i in range(30)], changes)
    write(spark, opts, [(i, None, "delete") for i in range(0, 30, 4)], changes)
    write(spark, opts, [(i, "v2", "upsert") for i in range(0, 30, 3)], changes)

    whole = rows_of(spark, opts | {"metadata.columns": "part=partition"}, ROWS)
    assert {r[2] for r in whole} == {0, 1, 2}
    for assigned in ([1], [0, 2]):
        part = rows_of(spark, _opts(bootstrap, {topic: assigned}), ROWS)
        assert sorted(part) == sorted(r for r in whole if r[2] in assigned), assigned


def test_watermark_merges_only_the_assigned_partitions(spark, new_topic, bootstrap):
    topic = new_topic(partitions=2)
    send(bootstrap, topic, [rec(1, partition=0, ts=T0 - 600_000), rec(2, partition=1, ts=T0)])
    more = {"metadata.columns": "part=partition, wm=watermark", "read.mode": "changelog"}

    def watermarks(assign: dict) -> set:
        rows = rows_of(spark, _opts(bootstrap, assign, more), ROWS + ", wm TIMESTAMP, _change_type STRING")
        return {round(r[3].replace(tzinfo=UTC).timestamp() * 1000) for r in rows}  # the session's zone is UTC

    assert watermarks({topic: [1]}) == {T0}, "partition 0, ten minutes behind, is not read: it holds nothing back"
    assert watermarks({topic: [0, 1]}) == {T0 - 600_000}


def test_stream_reads_only_the_assigned_partitions_and_never_a_new_one(spark, new_topic, bootstrap, tmp_path):
    topic, checkpoint = new_topic(partitions=2), tmp_path / "cp"
    send(bootstrap, topic, [rec(1, partition=0), rec(2, partition=1), rec(3, partition=1)])
    # Partitions are looked up again at every trigger: a new one would be found at once.
    opts = _opts(bootstrap, {topic: [1]}, {"scan.topic-partition-discovery.interval": "1 ms"})
    sink = Collector()
    query = start_collecting(stream(spark, opts, ROWS + ", _change_type STRING"), str(checkpoint), sink)
    try:
        wait_for(lambda: len(sink.rows) >= 2, "the records of partition 1")
        add_partition(bootstrap, topic)
        send(bootstrap, topic, [rec(4, partition=2), rec(5, partition=0)])
        send(bootstrap, topic, [rec(6, partition=1)])  # after the others: once it is read, they were seen
        wait_for(lambda: any(r[0] == 6 for r in sink.rows), "the last record of partition 1")
    finally:
        query.stop()
    assert sorted(r[:3] for r in sink.rows) == [(2, "v", 1), (3, "v", 1), (6, "v", 1)]
    stored = planned_offsets(checkpoint, planned_batches(checkpoint)[-1])
    assert {k: v for k, v in stored.items() if not k.startswith("@")} == {topic: {"1": 3}}


def test_stream_reader_plans_the_assigned_partitions_only(spark, new_topic, bootstrap):
    topic = new_topic(partitions=3)
    send(bootstrap, topic, [rec(i, partition=i % 3) for i in range(6)])
    reader = stream_reader(_opts(bootstrap, {topic: [0, 2]}), ROWS + ", _change_type STRING")
    start = reader.initialOffset()
    assert {k: v for k, v in start.items() if not k.startswith("@")} == {topic: {"0": 0, "2": 0}}
    end = reader.latestOffset(start, ReadAllAvailable())
    assert {k: v for k, v in end.items() if not k.startswith("@")} == {topic: {"0": 2, "2": 2}}
    ranges = reader.partitions(start, end)
    assert sorted((r.partition, r.start, r.end) for g in ranges for r in getattr(g, "ranges", (g,))) == [
        (0, 0, 2),
        (2, 0, 2),
    ]


def test_a_partition_the_topic_lacks_fails_naming_the_option(spark, new_topic, bootstrap):
    topic = new_topic(partitions=2)
    with pytest.raises(
        Exception,
        match=rf"option 'assign' names partition\(s\) 5 of topic '{topic}', which has "
        r"partitions 0, 1",
    ):
        rows_of(spark, _opts(bootstrap, {topic: [0, 5]}), ROWS)


def test_a_topic_that_does_not_exist_fails_naming_the_option(spark, bootstrap):
    with pytest.raises(Exception, match=r"topic 'no-such-topic-assigned' does not exist .*\(option 'assign'\)"):
        rows_of(spark, _opts(bootstrap, {"no-such-topic-assigned": [0]}), ROWS)


def test_assign_with_topic_fails_saying_to_give_one(spark, new_topic, bootstrap):
    topic = new_topic()
    opts = _opts(bootstrap, {topic: [0]}) | {"subscribe": topic}
    with pytest.raises(Exception, match=r"options 'topic' and 'assign' exclude each other; give one of them"):
        rows_of(spark, opts, ROWS)
