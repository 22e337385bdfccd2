"""How a read is split into Spark tasks: one per Kafka partition range, and in changelog mode slices of a
range (scan.split.max-records, minPartitions), each slice keeping its records in offset order."""

from __future__ import annotations

import pytest

from tests.support.read_helpers import load, rec, send

SLICED = "id INT, name STRING, part INT, off BIGINT, _change_type STRING"


def _fill(bootstrap: str, topic: str, sizes: dict[int, int]) -> None:
    send(bootstrap, topic, [rec(p * 100 + i, partition=p) for p, n in sizes.items() for i in range(n)])


def _slices(spark, options, topic: str, more: dict) -> list[list[tuple[int, int]]]:
    """(partition, offset) of the rows of each Spark partition, in the order the task produced them."""
    opts = options(topic, {"read.mode": "changelog", "metadata.columns": "part=partition, off=offset"} | more)
    df = load(spark, opts, SLICED)
    return [[(r.part, r.off) for r in task] for task in df.rdd.glom().collect()]


def _assert_ordered_slices(slices: list[list[tuple[int, int]]], sizes: dict[int, int]) -> None:
    for task in slices:
        assert len({p for p, _ in task}) == 1, "a slice holds one Kafka partition"
        offsets = [o for _, o in task]
        assert offsets == list(range(offsets[0], offsets[0] + len(offsets))), "offsets in order, none missing"
    every = sorted(x for task in slices for x in task)
    assert every == [(p, o) for p, n in sorted(sizes.items()) for o in range(n)]


def test_table_read_has_one_spark_partition_per_kafka_partition_with_records(spark, new_topic, options, bootstrap):
    topic = new_topic(partitions=3)
    _fill(bootstrap, topic, {0: 4, 2: 3})
    df = load(spark, options(topic), "id INT, name STRING")
    assert df.rdd.getNumPartitions() == 2
    assert sorted(len(task) for task in df.rdd.glom().collect()) == [3, 4]


def test_changelog_without_split_options_reads_each_partition_in_one_task(spark, new_topic, options, bootstrap):
    topic = new_topic(partitions=2)
    sizes = {0: 5, 1: 3}
    _fill(bootstrap, topic, sizes)
    slices = _slices(spark, options, topic, {})
    assert len(slices) == 2
    _assert_ordered_slices(slices, sizes)


@pytest.mark.parametrize("option", ["scan.split.max-records", "maxRecordsPerPartition"])
def test_split_max_records_slices_each_range_keeping_offset_order(spark, new_topic, options, bootstrap, option):
    topic = new_topic(partitions=2)
    sizes = {0: 10, 1: 3}
    _fill(bootstrap, topic, sizes)
    slices = _slices(spark, options, topic, {option: "4"})
    assert sorted(len(s) for s in slices) == [3, 3, 3, 4]  # 10 -> 3 slices of at most 4, 3 -> one
    _assert_ordered_slices(slices, sizes)


def test_min_partitions_splits_ranges_in_proportion_to_their_size(spark, new_topic, options, bootstrap):
    topic = new_topic(partitions=2)
    sizes = {0: 9, 1: 3}
    _fill(bootstrap, topic, sizes)
    slices = _slices(spark, options, topic, {"minPartitions": "4"})
    assert sorted((s[0][0], len(s)) for s in slices) == [(0, 3), (0, 3), (0, 3), (1, 3)]
    _assert_ordered_slices(slices, sizes)
