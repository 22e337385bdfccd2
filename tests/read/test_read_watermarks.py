"""Per-partition watermarks carried in the streaming offset, merged by minimum over partitions that are not
idle, and alignment: with scan.watermark.alignment.max-drift no partition runs ahead of the slowest one in
record time, so Spark's global watermark drops none of a lagging partition's rows."""

from __future__ import annotations

import datetime as dt
import json
import time
import uuid
from pathlib import Path

from confluent_kafka import Producer
from pyspark.sql import functions as F

from tests.support.checkpoints import planned_at, uncommit
from tests.support.read_helpers import (
    Collector,
    rec,
    recent_minute,
    run_available_now,
    send,
    start_collecting,
    stream,
    wait_for,
)

T0 = recent_minute()
WM_ROWS = "id INT, name STRING, part INT, ts TIMESTAMP, wm TIMESTAMP, _change_type STRING"
WM_META = "part=partition, ts=timestamp, wm=watermark"
UTC = dt.timezone.utc
IDLE_TIMEOUT_S = 1


def _ms(value: dt.datetime | None) -> int | None:
    return None if value is None else round(value.replace(tzinfo=UTC).timestamp() * 1000)


def _wait_until_idle(checkpoint: str, sink: Collector, record: int) -> None:
    """Until the partition of `record`, its last record, has had none for longer than the idle timeout as the reader
    counts it: from the planning of the batch that read it, which ended before Spark stamped that batch
    (batchTimestampMs). The next batch, planned after the caller sends, then finds the partition idle."""
    (batch,) = [b for b in sink.batches if any(r[0] == record for r in sink.by_batch[b])]
    since = planned_at(checkpoint, batch) + 0.001  # Spark's stamp is whole milliseconds, rounded down
    wait_for(lambda: time.time() - since > IDLE_TIMEOUT_S, f"record {record}'s partition to be idle", timeout=30)


def _lagging_pair(new_topic, bootstrap: str) -> str:
    """Partition 0 in the present (T0 .. T0+50 s), partition 1 ten minutes behind, a record every 10 s."""
    topic = new_topic(partitions=2)
    send(bootstrap, topic, [rec(i, partition=0, ts=T0 + i * 10_000) for i in range(6)])
    send(bootstrap, topic, [rec(100 + i, partition=1, ts=T0 - 600_000 + i * 10_000) for i in range(6)])
    return topic


def _window_counts(spark, options, topic: str, more: dict, checkpoint: str) -> tuple[dict[int, int], int]:
    """Counts per 30 s window (by window start, ms) of a watermarked stream read 4 records per batch."""
    opts = options(topic, {"metadata.columns": "ts=timestamp", "scan.max-records-per-batch": "4"} | more)
    counts = (
        stream(spark, opts, "id INT, name STRING, ts TIMESTAMP, _change_type STRING")
        .withWatermark("ts", "30 seconds")
        .groupBy(F.window("ts", "30 seconds"))
        .count()
        .select(F.col("window.start").alias("start"), "count")
    )
    sink = Collector()
    query = (
        counts.writeStream.outputMode("update")
        .foreachBatch(sink)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    try:
        query.awaitTermination(180)
        assert query.exception() is None
    finally:
        query.stop()
    latest: dict[int, int] = {}
    for start, count in sink.rows:  # update mode: a window's latest count is its total
        latest[_ms(start)] = count
    return latest, len(sink.batches)


def _exact(topic_starts: list[int]) -> dict[int, int]:
    return {start: 3 for start in topic_starts}


EXACT = _exact([T0, T0 + 30_000, T0 - 600_000, T0 - 570_000])


def test_without_alignment_spark_drops_the_lagging_partitions_rows_as_late(
    spark, new_topic, options, bootstrap, tmp_path
):
    topic = _lagging_pair(new_topic, bootstrap)
    counts, batches = _window_counts(spark, options, topic, {}, str(tmp_path / "cp"))
    assert batches >= 3
    lagging = sum(counts.get(start, 0) for start in (T0 - 600_000, T0 - 570_000))
    assert lagging < 6, f"expected late rows of the lagging partition to be dropped, got {counts}"


def test_with_alignment_no_row_is_late_and_every_window_count_is_exact(spark, new_topic, options, bootstrap, tmp_path):
    topic = _lagging_pair(new_topic, bootstrap)
    more = {"scan.watermark.alignment.max-drift": "30 s"}
    counts, batches = _window_counts(spark, options, topic, more, str(tmp_path / "cp"))
    assert batches >= 3
    assert counts == EXACT


def test_watermark_column_shows_the_minimum_of_the_partition_watermarks_when_the_batch_was_planned(
    spark, new_topic, options, bootstrap, tmp_path
):
    topic = _lagging_pair(new_topic, bootstrap)
    opts = options(topic, {"metadata.columns": WM_META, "scan.max-records-per-batch": "4"})
    checkpoint = tmp_path / "cp"
    sink = run_available_now(stream(spark, opts, WM_ROWS), str(checkpoint))
    assert len(sink.batches) >= 3

    seen: dict[int, int] = {}  # partition -> largest record timestamp of the batches before
    for b in sink.batches:
        rows = sink.by_batch[b]
        expected = min(seen.values()) if seen else None
        assert {_ms(r[4]) for r in rows} == {expected}, f"batch {b}"
        for r in rows:
            seen[r[2]] = max(seen.get(r[2], 0), _ms(r[3]))

    # The per-partition watermarks ride in the checkpointed offset, next to the offsets.
    offsets_dir = Path(checkpoint) / "offsets"
    last = max((p for p in offsets_dir.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    stored = json.loads(last.read_text().strip().splitlines()[-1])
    assert stored["@watermarks"] == {topic: {"0": T0 + 50_000, "1": T0 - 600_000 + 50_000}}
    assert stored[topic] == {"0": 6, "1": 6}


def test_an_idle_partition_stops_holding_back_the_merged_watermark(spark, new_topic, options, bootstrap, tmp_path):
    topic = new_topic(partitions=2)
    send(bootstrap, topic, [rec(1, partition=0, ts=T0), rec(2, partition=1, ts=T0 - 600_000)])
    opts = options(topic, {"metadata.columns": WM_META, "scan.watermark.idle-timeout": f"{IDLE_TIMEOUT_S} s"})
    sink = Collector()
    checkpoint = str(tmp_path / "cp")
    query = start_collecting(stream(spark, opts, WM_ROWS), checkpoint, sink)
    try:
        wait_for(lambda: len(sink.rows) >= 2, "the first records")
        _wait_until_idle(checkpoint, sink, 2)  # partition 1 gets nothing new
        send(bootstrap, topic, [rec(3, partition=0, ts=T0 + 1000)])
        wait_for(lambda: len(sink.rows) >= 3, "the next record")
    finally:
        query.stop()
    later = [r for r in sink.rows if r[0] == 3]
    # Partition 1 (ten minutes behind) is idle: the merged watermark is partition 0's alone.
    assert [_ms(r[4]) for r in later] == [T0]


def test_a_replayed_batch_gets_the_same_watermark_column_though_idleness_is_wall_clock(
    spark, new_topic, options, bootstrap, tmp_path
):
    """Idleness is decided when a batch is planned and recorded with its offsets: a restart (which forgets
    when each partition last moved) replays the batch with the same merged watermark."""
    topic = new_topic(partitions=2)
    send(bootstrap, topic, [rec(1, partition=0, ts=T0), rec(2, partition=1, ts=T0 - 600_000)])
    opts = options(topic, {"metadata.columns": WM_META, "scan.watermark.idle-timeout": f"{IDLE_TIMEOUT_S} s"})
    checkpoint = str(tmp_path / "cp")
    first = Collector()
    query = start_collecting(stream(spark, opts, WM_ROWS), checkpoint, first)
    try:
        wait_for(lambda: len(first.rows) >= 2, "the first records")
        _wait_until_idle(checkpoint, first, 2)  # partition 1 gets nothing new
        send(bootstrap, topic, [rec(3, partition=0, ts=T0 + 1000)])
        wait_for(lambda: len(first.rows) >= 3, "the next record")
    finally:
        query.stop()
    replayed = uncommit(checkpoint)
    assert [(r[0], _ms(r[4])) for r in first.by_batch[replayed]] == [(3, T0)], "partition 1 was idle"

    second = run_available_now(stream(spark, opts, WM_ROWS), checkpoint)
    assert second.batches == [replayed]
    assert second.by_batch[replayed] == first.by_batch[replayed]


def test_watermark_of_a_transactional_partition_skips_the_commit_markers(
    spark, new_topic, options, bootstrap, tmp_path
):
    topic = new_topic()
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"wm-{uuid.uuid4().hex[:8]}"})
    producer.init_transactions(30)
    for ids in ([1, 2], [3], [4, 5]):  # each transaction ends with a commit marker after its records
        producer.begin_transaction()
        for i in ids:
            key, value, _, _ = rec(i)
            producer.produce(topic, value, key, partition=0, timestamp=T0 + i * 1000)
        producer.commit_transaction(30)
    opts = options(topic, {"metadata.columns": WM_META, "scan.max-records-per-batch": "2"})
    checkpoint = tmp_path / "cp"
    sink = run_available_now(stream(spark, opts, WM_ROWS), str(checkpoint))
    assert sorted(r[0] for r in sink.rows) == [1, 2, 3, 4, 5]

    last = max((p for p in (checkpoint / "offsets").iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    stored = json.loads(last.read_text().strip().splitlines()[-1])
    assert stored["@watermarks"] == {topic: {"0": T0 + 5000}}
    # Each batch after the first carries the largest timestamp read before it.
    seen = 0
    for b in sink.batches:
        rows = sink.by_batch[b]
        assert {_ms(r[4]) for r in rows} == {seen or None}, f"batch {b}"
        seen = max([seen, *(_ms(r[3]) for r in rows)])
