"""Where a read starts and stops: Flink's scan.startup.* / scan.bounded.* and Spark's startingOffsets,
endingOffsets, startingTimestamp and endingTimestamp; a bounded stream stops at its bound."""

from __future__ import annotations

import json
import uuid

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.support.read_helpers import (
    Collector,
    rec,
    recent_minute,
    rows_of,
    run_available_now,
    send,
    start_collecting,
    stream,
    wait_for,
)

ROWS = "id INT, name STRING, part INT, _change_type STRING"
T0 = recent_minute()  # recent: the broker's retention would delete records years old


@pytest.fixture
def two_partitions(new_topic, bootstrap) -> str:
    """p0 holds ids 0..4 (offsets 0..4), p1 ids 10..12; record i of a partition has timestamp T0 + i s."""
    topic = new_topic(partitions=2)
    send(bootstrap, topic, [rec(i, partition=0, ts=T0 + i * 1000) for i in range(5)])
    send(bootstrap, topic, [rec(10 + i, partition=1, ts=T0 + i * 1000) for i in range(3)])
    return topic


def _read(spark, options, topic: str, more: dict) -> dict[int, list[int]]:
    """The ids read per partition, in offset order."""
    opts = options(topic, {"read.mode": "changelog", "metadata.columns": "part=partition"} | more)
    out: dict[int, list[int]] = {}
    for i, _, part, _ in rows_of(spark, opts, ROWS):
        out.setdefault(part, []).append(i)
    return out


def _commit(bootstrap: str, group: str, topic: str, offsets: dict[int, int]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    tps = [TopicPartition(topic, p, o) for p, o in offsets.items()]
    for future in admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, tps)]).values():
        future.result(30)


# -- start ---------------------------------------------------------------------------------------


def test_default_start_is_earliest_and_default_batch_end_is_latest(spark, options, two_partitions):
    assert _read(spark, options, two_partitions, {}) == {0: [0, 1, 2, 3, 4], 1: [10, 11, 12]}


@pytest.mark.parametrize("opts", [{"scan.startup.mode": "latest-offset"}, {"startingOffsets": "latest"}])
def test_latest_start_of_a_batch_read_reads_nothing(spark, options, two_partitions, opts):
    assert _read(spark, options, two_partitions, opts) == {}


def test_latest_start_of_a_stream_reads_only_records_written_after_it_started(
    spark, options, two_partitions, bootstrap, tmp_path
):
    opts = options(two_partitions, {"scan.startup.mode": "latest-offset", "metadata.columns": "part=partition"})
    sink = Collector()
    query = start_collecting(stream(spark, opts, ROWS), str(tmp_path / "cp"), sink)
    try:
        wait_for(lambda: query.recentProgress, "the stream's first trigger")
        send(bootstrap, two_partitions, [rec(100, partition=0), rec(101, partition=1)])
        wait_for(lambda: len(sink.rows) >= 2, "the records written after the start")
    finally:
        query.stop()
    assert sorted(r[0] for r in sink.rows) == [100, 101]


@pytest.mark.parametrize(
    "opts",
    [
        {"scan.startup.mode": "specific-offsets", "scan.startup.specific-offsets": "partition:0,offset:3"},
        {"startingOffsets": '{TOPIC: {"0": 3}}'},
        {"startingOffsets": '{TOPIC: {"0": 3, "1": -2}}'},
    ],
)
def test_specific_start_offsets_and_unlisted_partitions_from_earliest(spark, options, two_partitions, opts):
    opts = {k: v.replace("TOPIC", json.dumps(two_partitions)) for k, v in opts.items()}
    assert _read(spark, options, two_partitions, opts) == {0: [3, 4], 1: [10, 11, 12]}


def test_spark_starting_offsets_minus_one_starts_that_partition_at_latest(spark, options, two_partitions):
    opts = {"startingOffsets": json.dumps({two_partitions: {"0": 2, "1": -1}})}
    assert _read(spark, options, two_partitions, opts) == {0: [2, 3, 4]}


@pytest.mark.parametrize(
    "opts",
    [
        {"scan.startup.mode": "timestamp", "scan.startup.timestamp-millis": str(T0 + 1500)},
        {"startingTimestamp": str(T0 + 1500)},
    ],
)
def test_timestamp_start_reads_records_at_or_after_it(spark, options, two_partitions, opts):
    assert _read(spark, options, two_partitions, opts) == {0: [2, 3, 4], 1: [12]}


@pytest.mark.parametrize(
    "opts",
    [
        {"scan.startup.mode": "timestamp", "scan.startup.timestamp-millis": str(T0 + 60_000)},
        {"startingTimestamp": str(T0 + 60_000), "startingOffsetsByTimestampStrategy": "latest"},
        {"startingOffsetsByTimestamp": "BY_TS", "startingOffsetsByTimestampStrategy": "LATEST"},
    ],
)
def test_timestamp_start_after_every_record_reads_nothing_with_the_latest_strategy(
    spark, options, two_partitions, opts
):
    by_ts = json.dumps({two_partitions: {"0": T0 + 60_000, "1": T0 + 60_000}})
    opts = {k: v.replace("BY_TS", by_ts) for k, v in opts.items()}
    assert _read(spark, options, two_partitions, opts) == {}


@pytest.mark.parametrize("option", ["startingTimestamp", "startingOffsetsByTimestamp"])
def test_a_spark_timestamp_start_with_no_record_after_it_fails_by_default_naming_the_strategy(
    spark, options, two_partitions, option
):
    late = T0 + 60_000
    value = str(late) if option == "startingTimestamp" else json.dumps({two_partitions: {"0": late}})
    with pytest.raises(Exception, match=f"'{option}': no record at or after timestamp {late} .*partition.*0") as e:
        _read(spark, options, two_partitions, {option: value})
    assert "'startingOffsetsByTimestampStrategy' to latest" in str(e.value)


def test_starting_offsets_by_timestamp_per_partition_and_unlisted_partitions_from_earliest(
    spark, options, two_partitions
):
    by_ts = json.dumps({two_partitions: {"0": T0 + 2500}})
    assert _read(spark, options, two_partitions, {"startingOffsetsByTimestamp": by_ts}) == {0: [3, 4], 1: [10, 11, 12]}
    by_ts = json.dumps({two_partitions: {"0": T0 + 3000, "1": T0 + 1000}})
    assert _read(spark, options, two_partitions, {"startingOffsetsByTimestamp": by_ts}) == {0: [3, 4], 1: [11, 12]}


def test_ending_offsets_by_timestamp_per_partition_unlisted_and_unmatched_to_latest(spark, options, two_partitions):
    by_ts = json.dumps({two_partitions: {"0": T0 + 1500}})
    assert _read(spark, options, two_partitions, {"endingOffsetsByTimestamp": by_ts}) == {0: [0, 1], 1: [10, 11, 12]}
    by_ts = json.dumps({two_partitions: {"0": T0 + 60_000, "1": T0 + 1000}})
    assert _read(spark, options, two_partitions, {"endingOffsetsByTimestamp": by_ts}) == {0: [0, 1, 2, 3, 4], 1: [10]}


def test_offsets_by_timestamp_naming_a_partition_that_does_not_exist_fail_naming_it(spark, options, two_partitions):
    by_ts = json.dumps({two_partitions: {"7": T0}})
    with pytest.raises(Exception, match="'startingOffsetsByTimestamp' names partition 7"):
        _read(spark, options, two_partitions, {"startingOffsetsByTimestamp": by_ts})


def test_group_offsets_start_from_the_committed_offsets_and_fall_back_for_the_rest(
    spark, options, two_partitions, bootstrap
):
    group = f"g-{uuid.uuid4().hex[:8]}"
    _commit(bootstrap, group, two_partitions, {0: 3})
    base = {"scan.startup.mode": "group-offsets", "properties.group.id": group}

    earliest = base | {"properties.auto.offset.reset": "earliest"}
    assert _read(spark, options, two_partitions, earliest) == {0: [3, 4], 1: [10, 11, 12]}
    latest = base | {"properties.auto.offset.reset": "latest"}
    assert _read(spark, options, two_partitions, latest) == {0: [3, 4]}


def test_group_offsets_without_a_committed_offset_or_fallback_fail_naming_the_partition(
    spark, options, two_partitions, bootstrap
):
    group = f"g-{uuid.uuid4().hex[:8]}"
    _commit(bootstrap, group, two_partitions, {0: 3})
    opts = {"scan.startup.mode": "group-offsets", "properties.group.id": group}
    with pytest.raises(
        Exception,
        match=rf"group '{group}' has no committed offset for topic '{two_partitions}' "
        r"partition\(s\) \[1\].*'properties\.auto\.offset\.reset'",
    ):
        _read(spark, options, two_partitions, opts)


# -- end -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "opts",
    [
        {"endingOffsets": '{TOPIC: {"0": 2}}'},
        {"endingOffsets": '{TOPIC: {"0": 2, "1": -1}}'},
    ],
)
def test_specific_end_offsets_and_unlisted_partitions_to_latest(spark, options, two_partitions, opts):
    opts = {k: v.replace("TOPIC", json.dumps(two_partitions)) for k, v in opts.items()}
    assert _read(spark, options, two_partitions, opts) == {0: [0, 1], 1: [10, 11, 12]}


def test_flink_bounded_specific_offsets_read_nothing_of_an_unlisted_partition(spark, options, two_partitions):
    opts = {"scan.bounded.mode": "specific-offsets", "scan.bounded.specific-offsets": "partition:0,offset:2"}
    assert _read(spark, options, two_partitions, opts) == {0: [0, 1]}


def test_flink_bounded_specific_offsets_stream_reads_nothing_of_an_unlisted_partition(
    spark, options, two_partitions, tmp_path
):
    opts = options(
        two_partitions,
        {
            "scan.bounded.mode": "specific-offsets",
            "scan.bounded.specific-offsets": "partition:1,offset:2",
            "metadata.columns": "part=partition",
        },
    )
    sink = run_available_now(stream(spark, opts, "id INT, name STRING, part INT, _change_type STRING"), str(tmp_path))
    assert sorted((r[2], r[0]) for r in sink.rows) == [(1, 10), (1, 11)]


def test_batch_end_offsets_past_the_log_end_read_up_to_the_log_end(spark, options, two_partitions):
    ending = json.dumps({two_partitions: {"0": 3, "1": 1000}})
    assert _read(spark, options, two_partitions, {"endingOffsets": ending}) == {0: [0, 1, 2], 1: [10, 11, 12]}


@pytest.mark.parametrize(
    "opts",
    [
        {"scan.bounded.mode": "timestamp", "scan.bounded.timestamp-millis": str(T0 + 1500)},
        {"endingTimestamp": str(T0 + 1500)},
    ],
)
def test_timestamp_end_stops_before_the_first_record_at_or_after_it(spark, options, two_partitions, opts):
    assert _read(spark, options, two_partitions, opts) == {0: [0, 1], 1: [10, 11]}


def test_group_offsets_end_stops_at_the_committed_offsets(spark, options, two_partitions, bootstrap):
    group = f"g-{uuid.uuid4().hex[:8]}"
    _commit(bootstrap, group, two_partitions, {0: 1, 1: 2})
    opts = {"scan.bounded.mode": "group-offsets", "properties.group.id": group}
    assert _read(spark, options, two_partitions, opts) == {0: [0], 1: [10, 11]}


def test_start_and_end_together_read_the_range_between(spark, options, two_partitions):
    opts = {
        "scan.startup.mode": "specific-offsets",
        "scan.startup.specific-offsets": "partition:0,offset:1;partition:1,offset:1",
        "endingTimestamp": str(T0 + 2500),
    }
    assert _read(spark, options, two_partitions, opts) == {0: [1, 2], 1: [11, 12]}


# -- bounded streams -----------------------------------------------------------------------------


def test_bounded_stream_with_available_now_stops_at_the_bound(spark, options, two_partitions, tmp_path):
    opts = options(
        two_partitions,
        {"metadata.columns": "part=partition", "endingOffsets": json.dumps({two_partitions: {"0": 3, "1": 1}})},
    )
    sink = run_available_now(stream(spark, opts, ROWS), str(tmp_path / "cp"))
    assert sorted(r[0] for r in sink.rows) == [0, 1, 2, 10]


def test_bounded_stream_with_processing_time_reads_nothing_past_the_bound(
    spark, options, two_partitions, bootstrap, tmp_path
):
    opts = options(two_partitions, {"metadata.columns": "part=partition", "scan.bounded.mode": "latest-offset"})
    sink = Collector()
    # Report idle triggers too, so that we can wait for triggers that found nothing to read.
    spark.conf.set("spark.sql.streaming.noDataProgressEventInterval", "50")
    query = start_collecting(stream(spark, opts, ROWS), str(tmp_path / "cp"), sink)
    try:
        wait_for(lambda: len(sink.rows) >= 8, "the records up to the bound")
        send(bootstrap, two_partitions, [rec(100, partition=0), rec(101, partition=1)])
        seen = len(query.recentProgress)
        wait_for(lambda: len(query.recentProgress) >= seen + 3, "three more triggers")
        latest = json.loads(query.lastProgress["sources"][0]["endOffset"])
    finally:
        query.stop()
        spark.conf.unset("spark.sql.streaming.noDataProgressEventInterval")
    assert sorted(r[0] for r in sink.rows) == [0, 1, 2, 3, 4, 10, 11, 12]
    # batch 0 read up to the bound: its end offset, with its recorded start (and ranges read together in one
    # task, scan.coalesce.max-records), stays the offset
    start = {two_partitions: {"0": 0, "1": 0}}
    assert set(latest.pop("@uncleaned")) == {two_partitions}  # read/lost_deletes.py's marks: tested there
    assert latest == {
        "@format": 1,
        "@plan": {"split": {"coalesce": 20000}, "start": start},
        two_partitions: {"0": 5, "1": 3},
    }


def test_stream_starting_past_its_bound_reads_nothing_and_does_not_fail(spark, options, two_partitions, tmp_path):
    opts = options(
        two_partitions,
        {
            "metadata.columns": "part=partition",
            "startingOffsets": json.dumps({two_partitions: {"0": 4, "1": 1}}),
            "endingOffsets": json.dumps({two_partitions: {"0": 2, "1": 2}}),
        },
    )
    sink = run_available_now(stream(spark, opts, ROWS), str(tmp_path / "cp"))
    assert sorted(r[0] for r in sink.rows) == [11]


def test_the_timestamp_strategy_without_a_spark_timestamp_start_is_refused(spark, options):
    from pyspark_upsert_kafka import OptionError

    from tests.support.read_helpers import stream_reader

    with pytest.raises(OptionError, match="'startingOffsetsByTimestampStrategy' applies to a start given by"):
        stream_reader(options("t", {"startingOffsetsByTimestampStrategy": "latest"}), ROWS)
