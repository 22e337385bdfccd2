"""Offsets that are not simply consecutive: transaction gaps and aborted records (normal), and offsets
deleted from the log before they were read (data loss: an error, or skipped when asked)."""

from __future__ import annotations

import logging
import re
import time
import uuid

import pyarrow as pa
import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from pyspark_upsert_kafka.spark_internals import ReadAllAvailable

from tests.support.checkpoints import uncommit
from tests.support.kafka_io import add_partition
from tests.support.read_helpers import (
    as_checkpointed,
    delete_before,
    rec,
    rows_of,
    run_available_now,
    send,
    stream,
    stream_reader,
)

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
    delete_before(bootstrap, topic, 3)
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
    delete_before(bootstrap, topic, 3)
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
    delete_before(bootstrap, topic, 4)  # the checkpoint stands at offset 2

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
    add_partition(bootstrap, topic)
    send(bootstrap, topic, [rec(i, partition=1) for i in range(10, 15)])
    delete_before(bootstrap, topic, 3, partition=1)

    with pytest.raises(Exception, match=rf"offsets \[0, 3\) of topic '{topic}' partition 1 are no longer in Kafka"):
        run_available_now(stream(spark, _opts(options, topic), ROWS), checkpoint)
    resumed = run_available_now(stream(spark, _opts(options, topic, {"failOnDataLoss": "false"}), ROWS), checkpoint)
    assert [(r[0], r[2]) for r in resumed.rows] == [(13, 3), (14, 4)]


def test_a_new_partition_is_read_from_offset_0(spark, new_topic, options, bootstrap, tmp_path):
    topic = new_topic()
    send(bootstrap, topic, [rec(1)])
    checkpoint = str(tmp_path / "cp")
    assert len(run_available_now(stream(spark, _opts(options, topic), ROWS), checkpoint).rows) == 1
    add_partition(bootstrap, topic)
    send(bootstrap, topic, [rec(i, partition=1) for i in range(10, 13)] + [rec(2, partition=0)])
    resumed = run_available_now(stream(spark, _opts(options, topic), ROWS), checkpoint)
    assert sorted((r[0], r[2]) for r in resumed.rows) == [(2, 1), (10, 0), (11, 1), (12, 2)]


def test_a_replayed_batch_0_whose_records_were_deleted_is_data_loss(spark, new_topic, options, bootstrap, tmp_path):
    """Batch 0 read offsets [0, 6) and was not committed; retention then deleted [0, 3). Its replay starts where
    the batch was planned (not at the new earliest offset): data loss, or the documented skip."""
    topic = new_topic()
    send(bootstrap, topic, [rec(i) for i in range(6)])
    checkpoint = str(tmp_path / "cp")
    first = run_available_now(stream(spark, _opts(options, topic), ROWS), checkpoint)
    assert first.batches == [0] and len(first.rows) == 6
    assert uncommit(checkpoint) == 0
    delete_before(bootstrap, topic, 3)

    with pytest.raises(Exception, match=rf"offsets \[0, 3\) of topic '{topic}' partition 0 are no longer in Kafka"):
        run_available_now(stream(spark, _opts(options, topic), ROWS), checkpoint)
    resumed = run_available_now(stream(spark, _opts(options, topic, {"failOnDataLoss": "false"}), ROWS), checkpoint)
    assert resumed.batches == [0]
    assert [(r[0], r[2]) for r in resumed.rows] == [(3, 3), (4, 4), (5, 5)]


# -- the log moving under a planned range (between planning and reading) ---------------------------


def _recreate(bootstrap: str, topic: str) -> None:
    """Delete the topic and create it again, empty (deletion completes in the background: retry the creation)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.delete_topics([topic])[topic].result(30)
    deadline = time.monotonic() + 60
    while True:
        try:
            admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
            break
        except KafkaException:  # still being deleted
            assert time.monotonic() < deadline, f"topic {topic} could not be created again"
            time.sleep(0.2)
    while (found := admin.list_topics(timeout=10).topics.get(topic)) is None or found.error is not None:
        assert time.monotonic() < deadline, f"topic {topic} did not appear again"
        time.sleep(0.1)


def _planned(spark, opts: dict) -> tuple:
    """A stream reader and the ranges of its first micro-batch, as the driver plans them."""
    reader = stream_reader(opts, ROWS)
    start = as_checkpointed(reader.initialOffset())
    end = as_checkpointed(reader.latestOffset(start, ReadAllAvailable()))
    return reader, reader.partitions(start, end)


def _read(reader, rng) -> list[tuple]:
    """What the task of one range reads (read() as an executor runs it)."""
    batches = list(reader.read(rng))
    return [(r["id"], r["off"]) for b in batches for r in pa.Table.from_batches([b]).to_pylist()]


@pytest.mark.parametrize("fail", [True, False])
def test_a_task_whose_topic_was_recreated_after_planning_reads_nothing_outside_its_range(
    spark, new_topic, options, bootstrap, caplog, fail
):
    topic = new_topic()
    send(bootstrap, topic, [rec(i) for i in range(20)])
    opts = _opts(options, topic, {"scan.split.max-records": "10", "failOnDataLoss": str(fail).lower()})
    reader, ranges = _planned(spark, opts)
    assert [(r.start, r.end) for r in ranges] == [(0, 10), (10, 20)]
    _recreate(bootstrap, topic)
    send(bootstrap, topic, [rec(100 + i) for i in range(5)])  # the new log: offsets [0, 5)

    lost = rf"offsets \[10, 20\) of topic '{topic}' partition 0 are no longer in Kafka"
    if fail:
        with pytest.raises(Exception, match=lost):
            _read(reader, ranges[1])
        return
    with caplog.at_level(logging.WARNING, logger="upsert_kafka"):
        assert _read(reader, ranges[1]) == [], "records of the new log below the range's start"
    assert any(re.search(lost, r.getMessage()) and "going on: skip them" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("fail", [True, False])
def test_a_task_whose_records_were_deleted_after_planning_fails_or_skips_them_with_a_warning(
    spark, new_topic, options, bootstrap, caplog, fail
):
    topic = new_topic()
    send(bootstrap, topic, [rec(i) for i in range(10)])
    reader, ranges = _planned(spark, _opts(options, topic, {"failOnDataLoss": str(fail).lower()}))
    assert [(r.start, r.end) for r in ranges] == [(0, 10)]
    delete_before(bootstrap, topic, 4)

    lost = rf"offsets \[0, 4\) of topic '{topic}' partition 0 are no longer in Kafka"
    if fail:
        with pytest.raises(Exception, match=lost):
            _read(reader, ranges[0])
        return
    with caplog.at_level(logging.WARNING, logger="upsert_kafka"):
        assert _read(reader, ranges[0]) == [(i, i) for i in range(4, 10)]
    assert any(re.search(lost, r.getMessage()) and "going on: skip them" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("fail", [True, False])
def test_a_task_whose_log_now_ends_before_its_range_end_applies_the_data_loss_rule(
    spark, new_topic, options, bootstrap, caplog, fail
):
    """The topic was recreated and refilled up to offset 15 only: the range [10, 20) cannot be read to its end.
    Once nothing arrives for client.timeout, the log's end says why: data loss, not unreachable brokers."""
    topic = new_topic()
    send(bootstrap, topic, [rec(i) for i in range(20)])
    more = {"scan.split.max-records": "10", "failOnDataLoss": str(fail).lower(), "client.timeout": "2 s"}
    reader, ranges = _planned(spark, _opts(options, topic, more))
    _recreate(bootstrap, topic)
    send(bootstrap, topic, [rec(100 + i) for i in range(15)])

    lost = rf"offsets \[15, 20\) of topic '{topic}' partition 0 are no longer in Kafka \(the topic was recreated"
    if fail:
        with pytest.raises(Exception, match=lost):
            _read(reader, ranges[1])
        return
    with caplog.at_level(logging.WARNING, logger="upsert_kafka"):
        assert _read(reader, ranges[1]) == [(100 + i, i) for i in range(10, 15)], "what the log holds in the range"
    assert any(re.search(lost, r.getMessage()) and "going on: skip them" in r.getMessage() for r in caplog.records)
