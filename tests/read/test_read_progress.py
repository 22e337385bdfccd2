"""What a running stream tells its operator: the true log ends in StreamingQueryProgress (reportLatestOffset),
the lag and merged watermark logged per micro-batch, and the driver's clients closed by stop()."""

from __future__ import annotations

import gc
import json
import logging
import os
from pathlib import Path

import pytest
from pyspark_upsert_kafka.spark_internals import ReadAllAvailable, ReadMaxRows

from tests.support.read_helpers import (
    Collector,
    as_checkpointed,
    rec,
    recent_minute,
    send,
    start_collecting,
    stream,
    stream_reader,
    wait_for,
)

ROWS = "id INT, name STRING, wm TIMESTAMP, _change_type STRING"


def test_progress_shows_the_log_end_as_latest_offset_next_to_a_capped_end_offset(
    spark, new_topic, options, bootstrap, tmp_path
):
    topic = new_topic(partitions=2)
    send(bootstrap, topic, [rec(i, partition=0) for i in range(10)] + [rec(100 + i, partition=1) for i in range(4)])
    sink = Collector()
    query = start_collecting(stream(spark, options(topic, {"maxOffsetsPerTrigger": "4"})), str(tmp_path / "cp"), sink)
    try:
        wait_for(lambda: len(sink.rows) >= 14, "all 14 records")
        wait_for(lambda: len([p for p in query.recentProgress if p["numInputRows"]]) >= 2, "two batches' progress")
        progress = [p["sources"][0] for p in query.recentProgress if p["numInputRows"]]
    finally:
        query.stop()
    first = progress[0]
    end, latest = json.loads(first["endOffset"]), json.loads(first["latestOffset"])
    assert latest == {topic: {"0": 10, "1": 4}}, "the log ends, not the capped end of the batch"
    # The cap shares 4 records by backlog, rounding down (as Spark's kafka source): 2 + 1 in the first batch.
    assert end[topic] == {"0": 2, "1": 1}, end


def test_report_latest_offset_reuses_the_look_up_of_latest_offset_without_asking_the_brokers(
    spark, new_topic, options, bootstrap
):
    topic = new_topic(partitions=2)
    send(bootstrap, topic, [rec(i, partition=i % 2) for i in range(6)])
    reader = stream_reader(options(topic))
    assert reader.reportLatestOffset() is None, "nothing looked up yet: nothing to report"
    start = as_checkpointed(reader.initialOffset())
    reader.latestOffset(start, ReadMaxRows(2))

    class NoBrokers:
        def __getattr__(self, name):
            raise AssertionError(f"reportLatestOffset asked the brokers ({name})")

    reader.planner.brokers = NoBrokers()
    assert reader.reportLatestOffset() == {topic: {"0": 3, "1": 3}}


def test_each_planned_micro_batch_logs_the_records_behind_per_topic_and_the_merged_watermark(
    spark, new_topic, options, bootstrap, caplog
):
    first, second = new_topic(partitions=2), new_topic(partitions=1)
    base = recent_minute()
    send(bootstrap, first, [rec(i, partition=i % 2, ts=base + i) for i in range(8)])
    send(bootstrap, second, [rec(i, ts=base + 100 + i) for i in range(2)])
    opts = options(f"{first};{second}", {"metadata.columns": "wm=watermark", "maxOffsetsPerTrigger": "5"})
    reader = stream_reader(opts, ROWS)
    start = as_checkpointed(reader.initialOffset())
    with caplog.at_level(logging.INFO, logger="upsert_kafka"):
        end = as_checkpointed(reader.latestOffset(start, ReadMaxRows(5)))
    planned = [r.getMessage() for r in caplog.records if "micro-batch planned" in r.getMessage()]
    behind = dict(sorted({first: 8 - sum(end[first].values()), second: 2 - sum(end[second].values())}.items()))
    assert len(planned) == 1 and f"records behind the latest offset per topic {behind}" in planned[0], planned
    assert sum(behind.values()) == 5
    assert "merged watermark" in planned[0]

    caplog.clear()
    with caplog.at_level(logging.INFO, logger="upsert_kafka"):
        final = as_checkpointed(reader.latestOffset(end, ReadAllAvailable()))
        assert reader.latestOffset(final, ReadAllAvailable()) == final  # nothing new: no batch, no line
    planned = [r.getMessage() for r in caplog.records if "micro-batch planned" in r.getMessage()]
    assert len(planned) == 1 and f"per topic {dict.fromkeys(sorted((first, second)), 0)}" in planned[0], planned


def _connections_to(bootstrap: str) -> int:
    """This process's established TCP connections to the broker's port (from /proc: sockets this process owns)."""
    port = int(bootstrap.rsplit(":", 1)[1])
    owned = set()
    for fd in Path("/proc/self/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            owned.add(target[len("socket:[") : -1])
    count = 0
    for table in ("/proc/self/net/tcp", "/proc/self/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            remote_port, state, inode = int(fields[2].rsplit(":", 1)[1], 16), fields[3], fields[9]
            if remote_port == port and state == "01" and inode in owned:  # 01: ESTABLISHED
                count += 1
    return count


def test_stop_closes_the_drivers_clients_and_leaves_no_connection(spark, new_topic, options, bootstrap):
    topic = new_topic(partitions=2)
    send(bootstrap, topic, [rec(i, partition=i % 2, ts=recent_minute() + i) for i in range(6)])
    gc.collect()  # the readers of earlier tests, and their clients, gone first
    before = _connections_to(bootstrap)
    reader = stream_reader(options(topic, {"metadata.columns": "wm=watermark"}), ROWS)
    start = as_checkpointed(reader.initialOffset())
    reader.latestOffset(start, ReadAllAvailable())  # the admin client and the watermark consumer, both used
    assert _connections_to(bootstrap) > before
    consumer = reader.tracker._consumer
    assert consumer is not None

    reader.stop()
    gc.collect()
    wait_for(lambda: _connections_to(bootstrap) <= before, "the driver's connections to close", timeout=30)
    with pytest.raises(RuntimeError, match=r"^Consumer closed$"):  # closed, not merely dropped
        consumer.assignment()
