"""The reducing buffer in front of a task's output (write.buffer.ReducingOutput), driven by a manual clock: rows
wait for the interval or for max-rows distinct keys, then leave once per key with their last row; the timer's
errors reach the task. Pure logic with a recording output behind it; against the real broker and Spark:
tests/write/test_write_buffer.py."""

from __future__ import annotations

import threading

import pyarrow as pa
import pytest
from pyspark_upsert_kafka.write.buffer import Pending, ReducingOutput

from tests.support.clock import ManualClock


class Recorded:
    """The output behind the buffer: what was sent to it, and each wait for Kafka."""

    def __init__(self, fail: Exception | None = None) -> None:
        self.sent: list[list[tuple[bytes, str]]] = []
        self.flushes = 0
        self.fail = fail
        self.flushed = threading.Event()

    def send(self, pending: Pending) -> None:
        if self.fail is not None:
            raise self.fail
        self.sent.append(list(zip(pending.keys, pending.rows.column("v").to_pylist())))

    def flush(self) -> None:
        self.flushes += 1
        self.flushed.set()

    def stop(self) -> None:
        pass


def rows(*pairs: tuple[bytes, str]) -> Pending:
    keys = [k for k, _ in pairs]
    batch = pa.RecordBatch.from_pydict({"v": [v for _, v in pairs]})
    return Pending(batch, pa.array([False] * len(pairs)), keys)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


def test_buffered_rows_wait_for_the_interval_then_leave_once_per_key_with_their_last_row(clock):
    inner = Recorded()
    out = ReducingOutput(inner, max_rows=100, interval_s=1.0, clock=clock)
    try:
        out.send(rows((b"a", "a1"), (b"b", "b1"), (b"a", "a2")))
        clock.advance(0.5)
        out.timer.tick()
        assert inner.sent == [], "not due before the interval"

        clock.advance(0.5)
        out.timer.tick()  # the timer's thread may have flushed first: the rows leave once either way
        assert inner.sent == [[(b"b", "b1"), (b"a", "a2")]], "each key once, in the order of their last rows"
        assert inner.flushes == 1, "and waited for Kafka"
        assert out.reduced == 1
    finally:
        out.stop()


def test_the_timers_thread_flushes_on_its_own_once_the_clock_passes_the_interval(clock):
    inner = Recorded()
    out = ReducingOutput(inner, max_rows=100, interval_s=2.0, clock=clock)
    try:
        out.send(rows((b"a", "a1")))
        clock.advance(2.0)
        assert inner.flushed.wait(10), "the thread flushed without the task's thread"
        assert inner.sent == [[(b"a", "a1")]]
    finally:
        out.stop()


def test_max_rows_distinct_keys_flush_at_once_and_the_rest_waits(clock):
    inner = Recorded()
    out = ReducingOutput(inner, max_rows=2, interval_s=60.0, clock=clock)
    try:
        out.send(rows((b"a", "a1"), (b"a", "a2"), (b"b", "b1"), (b"c", "c1")))
        assert inner.sent == [[(b"a", "a2"), (b"b", "b1")]], "full at the second distinct key"
        assert out.reduced == 1

        out.stop()
        out.flush()  # the task's end
        assert inner.sent[1:] == [[(b"c", "c1")]]
    finally:
        out.stop()


def test_an_interval_flush_that_failed_fails_the_tasks_next_send(clock):
    inner = Recorded(fail=ConnectionError("brokers away"))
    out = ReducingOutput(inner, max_rows=100, interval_s=1.0, clock=clock)
    try:
        out.send(rows((b"a", "a1")))
        clock.advance(1.0)
        out.timer.tick()
        with pytest.raises(ConnectionError, match="brokers away"):
            out.send(rows((b"b", "b1")))
        with pytest.raises(ConnectionError, match="brokers away"):
            out.flush()
    finally:
        out.stop()
