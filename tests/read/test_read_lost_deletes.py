"""Deletes that compaction cannot lose (read/lost_deletes.py): a changelog stream stopped while the log cleaner
removed a tombstone it had not read fails when restarted, naming the partition and the ways on; with
scan.compaction-lost-deletes=warn it goes on and its offsets record the partition. A stream that keeps up (idle at
the log end, or lagging a little under a read limit) is never stopped, however long it runs."""

from __future__ import annotations

import re

import pytest
from pyspark_upsert_kafka.errors import DataLossError
from pyspark_upsert_kafka.read.source import UpsertKafkaStreamReader
from pyspark_upsert_kafka.spark_internals import ReadAllAvailable, ReadMaxRows

from tests.support.checkpoints import planned_batches, planned_offsets
from tests.support.clock import ManualClock
from tests.support.kafka_io import consume_all
from tests.support.read_helpers import (
    CHANGES,
    Collector,
    as_checkpointed,
    read_spec,
    rec,
    run_available_now,
    send,
    stream,
    wait_for,
)

# Compacted, tombstones kept 1 s after their first cleaning, a new segment for each record that comes 100 ms after
# the segment's first (only closed segments are cleaned), cleaned as soon as anything is dirty.
QUICK_CLEANING = {
    "cleanup.policy": "compact",
    "delete.retention.ms": "1000",
    "segment.ms": "100",
    "min.cleanable.dirty.ratio": "0.01",
    "min.compaction.lag.ms": "0",
}


def _clean_away(bootstrap: str, topic: str, offset: int) -> None:
    """Produce records of other keys (each closes a segment and dirties the log) until the log cleaner has removed
    the record at `offset`: a tombstone goes at the first cleaning after its delete horizon."""
    fillers = iter(range(1000, 1200))

    def gone() -> bool:
        send(bootstrap, topic, [rec(next(fillers))])
        return offset not in {o for _, o, _, _ in consume_all(bootstrap, topic)}

    wait_for(gone, f"the log cleaner to remove offset {offset} of {topic}", timeout=40)


def test_a_stream_restarted_after_the_cleaner_removed_an_unread_delete_fails_and_warn_goes_on(
    spark, new_topic, options, bootstrap, tmp_path
):
    topic = new_topic(1, **QUICK_CLEANING)
    send(bootstrap, topic, [rec(1, "a"), rec(2, "b")])
    checkpoint, opts = str(tmp_path / "cp"), options(topic)
    first = run_available_now(stream(spark, opts), checkpoint)
    assert sorted(r[:2] for r in first.rows) == [(1, "a"), (2, "b")]

    send(bootstrap, topic, [rec(1, None)])  # offset 2: key 1 deleted while the stream is stopped
    _clean_away(bootstrap, topic, 2)
    assert 0 not in {o for _, o, _, _ in consume_all(bootstrap, topic)}, "its value went with the first cleaning"

    failing = stream(spark, opts).writeStream.foreachBatch(Collector()).option("checkpointLocation", checkpoint)
    query = failing.trigger(availableNow=True).start()
    try:
        with pytest.raises(Exception) as failure:
            query.awaitTermination(120)
    finally:
        query.stop()
    text = re.sub(r"\s+", " ", str(failure.value))
    assert f"data loss: deletes may be lost in topic '{topic}' partition 0 from offset 2" in text, text
    assert "drops tombstones 1000 ms after cleaning them (delete.retention.ms)" in text, text
    assert "rebuild the tables from a table read (read.mode=table)" in text, text
    assert "set option 'scan.compaction-lost-deletes' to warn to go on" in text, text
    assert len(planned_batches(checkpoint)) == 1, "no batch was planned past the loss"

    accepted = run_available_now(stream(spark, opts | {"scan.compaction-lost-deletes": "warn"}), checkpoint)
    ids = sorted(r[0] for r in accepted.rows)
    assert ids and all(i >= 1000 for i in ids), "it went on past the loss: the fillers, and no delete of key 1"
    # The accepted loss shows in the batch's offset: the query's progress (endOffset) and its checkpoint.
    assert planned_offsets(checkpoint, 1)["@plan"]["lost-deletes"] == {topic: [0]}


def _reader(options: dict, clock: ManualClock) -> UpsertKafkaStreamReader:
    return UpsertKafkaStreamReader(read_spec(options, CHANGES, streaming=True), clock)


def _batch(reader: UpsertKafkaStreamReader, start: dict, limit=None) -> dict:
    """Plan and hand out the next micro-batch from `start` as Spark does; its end offset, as checkpointed."""
    end = as_checkpointed(reader.latestOffset(start, limit or ReadAllAvailable()))
    reader.partitions(start, end)
    return end


def test_a_stream_that_keeps_up_is_never_stopped_however_long_it_runs(new_topic, options, bootstrap):
    """Days on a manual clock against a topic that drops tombstones an hour after cleaning them: idle at the log end
    between records, then lagging under a read limit, the stream is stamped by its last look at the log end."""
    topic = new_topic(1, **{"cleanup.policy": "compact", "delete.retention.ms": "3600000"})
    clock = ManualClock()
    reader = _reader(options(topic), clock)
    send(bootstrap, topic, [rec(1, "a")])
    end = _batch(reader, as_checkpointed(reader.initialOffset()))
    for day in range(3):  # idle for days, looking at the log end every half hour (triggers look far more often)
        for _ in range(2 * 24):
            clock.advance(1800)
            assert as_checkpointed(reader.latestOffset(end, ReadAllAvailable())) == end, "nothing new"
        send(bootstrap, topic, [rec(1, None), rec(2, f"day {day}")])
        end = _batch(reader, end)
    assert end[topic] == {"0": 7}
    send(bootstrap, topic, [rec(10 + i) for i in range(6)])
    for _ in range(6):  # two records a batch, a batch every 10 minutes: the stream lags, never by an hour
        clock.advance(600)
        end = _batch(reader, end, ReadMaxRows(2))
        send(bootstrap, topic, [rec(20)])
    assert end[topic] == {"0": 18}, "it lagged: one record of the 19 left behind"

    restarted = _reader(options(topic), clock)  # the same checkpoint after an hour stopped: at risk
    clock.advance(3600)
    with pytest.raises(DataLossError, match=rf"deletes may be lost in topic '{topic}' partition 0 from offset"):
        _batch(restarted, end)


def test_a_micro_batch_replayed_after_delete_retention_is_checked_again(new_topic, options, bootstrap):
    """Spark replays a batch that was planned but not committed with its recorded offsets: its reads come as late as
    the restart, so the batch is checked again then; with warn it is read, as planned."""
    topic = new_topic(1, **{"cleanup.policy": "compact", "delete.retention.ms": "3600000"})
    clock = ManualClock()
    send(bootstrap, topic, [rec(1, "a")])
    first = _reader(options(topic), clock)
    end = _batch(first, as_checkpointed(first.initialOffset()))
    send(bootstrap, topic, [rec(1, None)])
    clock.advance(60)
    planned = as_checkpointed(first.latestOffset(end, ReadAllAvailable()))  # the query stops before running it

    clock.advance(3600)
    with pytest.raises(DataLossError, match=rf"deletes may be lost in topic '{topic}' partition 0 from offset 1"):
        _reader(options(topic), clock).partitions(end, planned)
    accepting = _reader(options(topic) | {"scan.compaction-lost-deletes": "warn"}, clock)
    assert [(r.start, r.end) for r in accepting.partitions(end, planned)] == [(1, 2)]
