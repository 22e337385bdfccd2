"""Idle partitions and the merged watermark (read.watermarks.WatermarkTracker), on a manual clock: a partition
with no new record for scan.watermark.idle-timeout stops holding the merged watermark back, as in Flink. Pure
logic: the broker's answer (the timestamp of each partition's last record read) is given. End to end, with the
real broker and Spark's clock: tests/read/test_read_watermarks.py."""

from __future__ import annotations

from types import SimpleNamespace

from pyspark_upsert_kafka.read.watermarks import WatermarkTracker

from tests.support.clock import ManualClock


class Tracker(WatermarkTracker):
    def __init__(self, clock: ManualClock, idle_timeout_s: float | None) -> None:
        super().__init__(SimpleNamespace(spec=SimpleNamespace(watermark_idle_timeout_s=idle_timeout_s)), clock)
        self.last: dict[tuple[str, int], int] = {}  # the timestamp of each partition's last record read

    def _last_timestamps(self, ranges: dict) -> dict:
        return {tp: self.last[tp] for tp in ranges}


def test_a_partition_without_new_records_for_the_idle_timeout_stops_holding_back_the_merged_watermark():
    clock = ManualClock()
    tracker = Tracker(clock, idle_timeout_s=2.0)
    tracker.last = {("t", 0): 1000, ("t", 1): 500}
    marks = tracker.advance({"t": {0: 0, 1: 0}}, {"t": {0: 5, 1: 5}}, {})
    assert marks == {"t": {0: 1000, 1: 500}}
    assert tracker.idle(marks) == frozenset() and tracker.merged(marks) == 500

    clock.advance(1.0)
    tracker.last = {("t", 0): 3000}
    marks = tracker.advance({"t": {0: 5, 1: 5}}, {"t": {0: 9, 1: 5}}, marks)  # partition 1 gets nothing new
    assert tracker.idle(marks) == frozenset() and tracker.merged(marks) == 500, "not idle for 2 s yet"

    clock.advance(1.0)
    assert tracker.idle(marks) == frozenset({("t", 1)}), "2 s without a record; partition 0 had one 1 s ago"
    assert tracker.merged(marks) == 3000


def test_when_every_partition_is_idle_the_merged_watermark_is_their_minimum():
    clock = ManualClock()
    tracker = Tracker(clock, idle_timeout_s=2.0)
    tracker.last = {("t", 0): 1000, ("t", 1): 500}
    marks = tracker.advance({"t": {0: 0, 1: 0}}, {"t": {0: 5, 1: 5}}, {})
    clock.advance(2.0)
    assert tracker.idle(marks) == frozenset({("t", 0), ("t", 1)})
    assert tracker.merged(marks) == 500


def test_a_batchs_recorded_idleness_is_used_instead_of_the_clock():
    clock = ManualClock()
    tracker = Tracker(clock, idle_timeout_s=2.0)
    tracker.last = {("t", 0): 1000, ("t", 1): 500}
    marks = tracker.advance({"t": {0: 0, 1: 0}}, {"t": {0: 5, 1: 5}}, {})
    clock.advance(10.0)
    assert tracker.merged(marks, idle=frozenset()) == 500, "a replay keeps what its plan recorded"
    assert tracker.merged(marks, idle=frozenset({("t", 1)})) == 1000


def test_without_an_idle_timeout_no_partition_is_ever_idle():
    clock = ManualClock()
    tracker = Tracker(clock, idle_timeout_s=None)
    tracker.last = {("t", 0): 1000, ("t", 1): 500}
    marks = tracker.advance({"t": {0: 0, 1: 0}}, {"t": {0: 5, 1: 5}}, {})
    clock.advance(3600.0)
    assert tracker.idle(marks) == frozenset() and tracker.merged(marks) == 500
