"""A minimum micro-batch size, as Spark's kafka source defines it: minOffsetsPerTrigger holds a new batch back
while fewer records are available, for at most maxTriggerDelay since the last batch; ignored under
Trigger.AvailableNow."""

from __future__ import annotations

import json
import time

import pytest
from pyspark_upsert_kafka import OptionError
from pyspark_upsert_kafka.spark_internals import ReadAllAvailable, ReadMaxRows, ReadMinRows

from tests.support.read_helpers import (
    Collector,
    as_checkpointed,
    rec,
    run_available_now,
    send,
    start_collecting,
    stream,
    stream_reader,
    wait_for,
)


def _total(offset: dict, topic: str) -> int:
    return sum(offset[topic].values())


@pytest.mark.parametrize("more", [{}, {"maxOffsetsPerTrigger": "100"}], ids=["min-only", "with-max"])
def test_a_micro_batch_waits_for_min_offsets_per_trigger_records(spark, new_topic, options, bootstrap, tmp_path, more):
    topic = new_topic(partitions=2)
    send(bootstrap, topic, [rec(i, partition=i % 2) for i in range(2)])
    opts = options(topic, {"minOffsetsPerTrigger": "4", "maxTriggerDelay": "1h", **more})
    sink = Collector()
    # A progress event for every trigger, those without a batch too: their latestOffset shows what the source saw.
    spark.conf.set("spark.sql.streaming.noDataProgressEventInterval", "0")
    try:
        query = start_collecting(stream(spark, opts), str(tmp_path / "cp"), sink)
    finally:
        spark.conf.unset("spark.sql.streaming.noDataProgressEventInterval")

    def seen(total: int) -> bool:
        latest = [p["sources"][0]["latestOffset"] for p in query.recentProgress if not p["numInputRows"]]
        return any(_total(json.loads(o), topic) == total for o in latest if o)

    try:
        wait_for(lambda: len(sink.rows) >= 2, "the first trigger, which always runs")
        send(bootstrap, topic, [rec(10 + i, partition=i % 2) for i in range(3)])  # 3 < 4: held back
        wait_for(lambda: seen(5), "a trigger that saw the 3 new records and ran no batch")
        send(bootstrap, topic, [rec(20, partition=0)])  # 4: the next batch goes
        wait_for(lambda: len(sink.rows) >= 6, "the 4 later records")
    finally:
        query.stop()
    sizes = [len(sink.by_batch[b]) for b in sink.batches if sink.by_batch[b]]
    assert sizes == [2, 4], sizes


def test_max_trigger_delay_lets_a_small_batch_go_once_it_has_passed(spark, new_topic, options, bootstrap):
    topic = new_topic(partitions=1)
    send(bootstrap, topic, [rec(i) for i in range(2)])
    reader = stream_reader(options(topic, {"minOffsetsPerTrigger": "10", "maxTriggerDelay": "2s"}))
    start = as_checkpointed(reader.initialOffset())
    first = as_checkpointed(reader.latestOffset(start, ReadMinRows(10)))
    went = time.monotonic()
    assert _total(first, topic) == 2, "the first trigger goes whatever it has"
    send(bootstrap, topic, [rec(i) for i in range(2, 5)])
    assert reader.latestOffset(first, ReadMinRows(10)) == first, "3 new records < 10: no new batch"

    ends: list[dict] = []
    wait_for(lambda: ends.append(reader.latestOffset(first, ReadMinRows(10))) or ends[-1] != first, "the delay")
    assert time.monotonic() - went >= 2.0
    assert _total(ends[-1], topic) == 5
    # The delay counts again from the batch it let go.
    send(bootstrap, topic, [rec(5)])
    second = as_checkpointed(ends[-1])
    assert reader.latestOffset(second, ReadMinRows(10)) == second


def test_min_offsets_per_trigger_gives_way_to_read_all_available(spark, new_topic, options, bootstrap):
    topic = new_topic(partitions=1)
    reader = stream_reader(options(topic, {"minOffsetsPerTrigger": "10", "maxOffsetsPerTrigger": "50"}))
    assert reader.getDefaultReadLimit() == ReadMaxRows(50)  # PySpark has no composite limit: the reader keeps min
    start = as_checkpointed(reader.initialOffset())
    first = as_checkpointed(reader.latestOffset(start, ReadMaxRows(50)))
    send(bootstrap, topic, [rec(i) for i in range(3)])
    assert reader.latestOffset(first, ReadMaxRows(50)) == first
    assert _total(reader.latestOffset(first, ReadAllAvailable()), topic) == 3


def test_available_now_ignores_min_offsets_per_trigger_and_reads_everything(
    spark, new_topic, options, bootstrap, tmp_path
):
    topic = new_topic(partitions=1)
    send(bootstrap, topic, [rec(i) for i in range(5)])
    opts = options(topic, {"minOffsetsPerTrigger": "3", "maxTriggerDelay": "1h", "maxOffsetsPerTrigger": "2"})
    sink = run_available_now(stream(spark, opts), str(tmp_path / "cp"))
    assert sorted(r[0] for r in sink.rows) == list(range(5))
    assert [len(sink.by_batch[b]) for b in sink.batches] == [2, 2, 1]


def test_max_trigger_delay_without_min_offsets_per_trigger_is_refused(spark, options):
    with pytest.raises(OptionError, match=r"'maxTriggerDelay'.*'minOffsetsPerTrigger'"):
        stream_reader(options("t", {"maxTriggerDelay": "5m"}))
