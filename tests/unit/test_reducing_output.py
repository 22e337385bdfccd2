"""The reducing buffer in front of a task's output (write.buffer.ReducingOutput), driven by a manual clock: rows
wait for the interval or for max-rows distinct keys, then leave once per key with their last row; the timer's
errors reach the task. Pure logic with a recording output behind it; against the real broker and Spark:
tests/write/test_write_buffer.py."""

from __future__ import annotations

import itertools
import threading

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark_upsert_kafka.write.buffer import Pending, ReducingBuffer, ReducingOutput

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


# -- with sink.upsert.version: each key's row of the highest version --------------------------------------------------


def versioned(rows_: list[tuple[bytes, int]], first: int) -> Pending:
    """Rows (key, version), their values the rows' numbers from `first` on."""
    pending = rows(*((k, str(first + i)) for i, (k, _) in enumerate(rows_)))
    pending.versions = np.array([v for _, v in rows_], np.int64)
    return pending


def expected_windows(all_rows: list[tuple[bytes, int]], max_rows: int) -> list[list[tuple[bytes, str]]]:
    """Record by record: a flush when the buffer holds max_rows distinct keys, the row that fills it included, and
    the rest at the end; each key once with its row of the highest version (equal: the later), in row order."""
    windows: list[list[int]] = [[]]
    for i in range(len(all_rows)):
        windows[-1].append(i)
        if len({all_rows[j][0] for j in windows[-1]}) == max_rows:
            windows.append([])
    flushes = []
    for window in filter(None, windows):
        best: dict[bytes, int] = {}
        for i in window:
            key, version = all_rows[i]
            if key not in best or version >= all_rows[best[key]][1]:
                best[key] = i
        flushes.append([(all_rows[i][0], str(i)) for i in sorted(best.values())])
    return flushes


@settings(max_examples=300)
@given(
    st.lists(st.tuples(st.sampled_from([b"a", b"b", b"c", b"d"]), st.integers(-3, 3)), max_size=40),
    st.integers(1, 5),
    st.lists(st.integers(1, 10), min_size=1),
)
def test_with_versions_each_flush_holds_each_keys_row_of_the_highest_version(all_rows, max_rows, sizes):
    buffer, sent, start = ReducingBuffer(max_rows), [], 0
    for size in itertools.cycle(sizes):
        if start >= len(all_rows):
            break
        part = versioned(all_rows[start : start + size], start)
        start += size
        sent += [list(zip(p.keys, p.rows.column("v").to_pylist())) for p in buffer.add(part)]
    if (rest := buffer.drain()) is not None:
        sent.append(list(zip(rest.keys, rest.rows.column("v").to_pylist())))
    assert sent == expected_windows(all_rows, max_rows)
