"""Driver side: per-partition watermarks, merged by minimum, and alignment of partitions in record time.

Spark's watermark is global (max event time seen minus the delay), so a partition that lags in record
time has its rows dropped as late. Here each partition's watermark is the largest record timestamp it
has been read up to; the merged watermark is their minimum over partitions that are not idle. With
`scan.watermark.alignment.max-drift`, each micro-batch's end offset of every partition is held at the
first record past (merged watermark + drift), so no partition runs ahead of the slowest active one.

The driver never sees records, so it asks the broker: the timestamps of the last records before a
partition's end (past any transaction markers) and of the record at its start (the next one to read),
and offsets-for-times for the cap.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import OffsetSpec

from ..kafka.clients import consumer
from ..kernel.clock import SYSTEM_CLOCK, Clock
from .offsets import Offsets
from .planner import Planner

log = logging.getLogger("upsert_kafka")

TP = tuple[str, int]


class WatermarkTracker:
    def __init__(self, planner: Planner, clock: Clock = SYSTEM_CLOCK) -> None:
        self.planner, self.spec, self.clock = planner, planner.spec, clock
        self._consumer: Consumer | None = None
        self._last_advance: dict[TP, float] = {}  # when each partition last had new records, on `clock`

    def __getstate__(self) -> dict[str, object]:
        return {"planner": self.planner, "spec": self.spec, "clock": self.clock, "_consumer": None, "_last_advance": {}}

    def close(self) -> None:
        """Close the look-up consumer (a later look-up opens another)."""
        client, self._consumer = self._consumer, None
        if client is not None:
            client.close()

    # -- watermarks ------------------------------------------------------------------------------

    def advance(self, start: Offsets, end: Offsets, watermarks: Offsets) -> dict[str, dict[int, int]]:
        """Watermarks after reading [start, end): each partition's previous one, raised to the largest
        timestamp among the last records admitted."""
        now = self.clock.monotonic()
        moved = [(t, p) for t, ps in end.items() for p, e in ps.items() if e > start.get(t, {}).get(p, e)]
        for tp in moved:
            self._last_advance[tp] = now
        last = self._last_timestamps({tp: (start.get(tp[0], {}).get(tp[1], 0), end[tp[0]][tp[1]]) for tp in moved})
        out = {t: dict(ps) for t, ps in watermarks.items()}
        for (t, p), ts in last.items():
            out.setdefault(t, {})[p] = max(ts, out.get(t, {}).get(p, ts))
        return out

    def idle(self, watermarks: Offsets) -> frozenset[TP]:
        """The partitions with no new record for the idle timeout, by this process's wall clock (none without
        a timeout). Decided when a micro-batch is planned and recorded with its offsets: a replay reuses it."""
        timeout = self.spec.watermark_idle_timeout_s
        if timeout is None:
            return frozenset()
        now = self.clock.monotonic()
        known = [(t, p) for t, ps in watermarks.items() for p in ps]
        for tp in known:
            self._last_advance.setdefault(tp, now)
        return frozenset(tp for tp in known if now - self._last_advance[tp] >= timeout)

    def merged(self, watermarks: Offsets, idle: frozenset[TP] | None = None) -> int | None:
        """The minimum over partitions that are not idle (all of them when every one is idle); `idle` as a
        batch's plan recorded it, else decided now."""
        idle = self.idle(watermarks) if idle is None else idle
        known = {(t, p): w for t, ps in watermarks.items() for p, w in ps.items()}
        values = [w for tp, w in known.items() if tp not in idle] or list(known.values())
        return min(values) if values else None

    # -- alignment -------------------------------------------------------------------------------

    def align(self, start: Offsets, end: Offsets, watermarks: Offsets) -> dict[str, dict[int, int]]:
        """Cap every partition's end at the first record past the alignment threshold."""
        backlog = {(t, p): start[t][p] for t, ps in end.items() for p, e in ps.items() if e > start[t][p]}
        if not backlog:
            return {t: dict(ps) for t, ps in end.items()}
        merged = self.merged(watermarks)
        # Never below the earliest next record: the slowest partition can always advance.
        earliest_next = min(self._timestamps(backlog, before=end).values(), default=None)
        bases = [b for b in (merged, earliest_next) if b is not None]
        if not bases:
            return {t: dict(ps) for t, ps in end.items()}
        drift = self.spec.alignment_max_drift_ms
        assert drift is not None, "aligned only with a drift"  # the stream reader's check
        threshold = max(bases) + drift
        caps = self.planner.list_offsets(
            {t: [p for (tt, p) in backlog if tt == t] for t in {t for t, _ in backlog}},
            lambda: OffsetSpec.for_timestamp(threshold),
        )
        out = {t: dict(ps) for t, ps in end.items()}
        for t, ps in caps.items():
            for p, cap in ps.items():
                if cap >= 0:  # -1: no record at or after the threshold, nothing to hold back
                    out[t][p] = max(start[t][p], min(out[t][p], cap))
        log.info("upsert-kafka: alignment threshold %d ms (merged watermark %s)", threshold, merged)
        return out

    # -- broker look-ups -------------------------------------------------------------------------

    def _last_timestamps(self, ranges: dict[TP, tuple[int, int]]) -> dict[TP, int]:
        """The largest timestamp among the last records of each [start, end) range. The offset before the end
        may hold no record (a transaction's commit marker, an aborted record), so the window looked at widens
        back towards the start until it finds one."""
        found: dict[TP, int] = {}
        pending, width = dict(ranges), _LAST_WINDOW
        while pending:
            positions = {tp: max(start, end - width) for tp, (start, end) in pending.items()}
            found |= self._scan(positions, {tp: end for tp, (_, end) in pending.items()}, first_only=False)
            pending = {tp: r for tp, r in pending.items() if tp not in found and positions[tp] > r[0]}
            width *= _LAST_WINDOW
        return found

    def _timestamps(self, positions: dict[TP, int], before: Offsets) -> dict[TP, int]:
        """Timestamp of the first record at or after each position, if it lies before `before`'s offset."""
        ends = {(t, p): before[t][p] for t, p in positions}
        return self._scan(positions, ends, first_only=True)

    def _scan(self, positions: dict[TP, int], ends: dict[TP, int], first_only: bool) -> dict[TP, int]:
        """Read each partition from its position to its end (or its first record): the largest timestamp."""
        if not positions:
            return {}
        if self._consumer is None:
            # Short broker long-polls: a look-up re-assigns partitions, and a fetch still waiting at the end of
            # the previous assignment's log would hold the new one back for fetch.wait.max.ms (500 ms).
            kafka = self.spec.kafka
            if "fetch.wait.max.ms" not in dict(kafka.properties):
                kafka = replace(kafka, properties=(*kafka.properties, ("fetch.wait.max.ms", "10")))
            self._consumer, _ = consumer(kafka)  # a failed look-up keeps a watermark where it was, never ahead
        client = self._consumer
        client.assign([TopicPartition(t, p, o) for (t, p), o in positions.items()])
        found: dict[TP, int] = {}
        pending = {tp for tp in positions if positions[tp] < ends[tp]}
        # A network wait: real time, not the tracker's clock (a test's manual clock would never end it).
        deadline = SYSTEM_CLOCK.monotonic() + self.spec.kafka.timeout_s
        try:
            while pending and SYSTEM_CLOCK.monotonic() < deadline:
                # A short wait per call: consume() returns only when the batch is full or the wait is over.
                for m in client.consume(num_messages=_LAST_WINDOW * len(pending), timeout=0.02):
                    tp = (m.topic(), m.partition())
                    if tp not in pending:
                        continue
                    if m.error() is not None:  # the end of the log, or offsets gone: nothing more to see
                        pending.discard(tp)
                        continue
                    offset = m.offset()
                    # Left over from an earlier look-up's assignment. (A record always has an offset.)
                    if offset is None or offset < positions[tp]:
                        continue
                    if offset >= ends[tp]:
                        pending.discard(tp)
                        continue
                    if m.timestamp()[1] >= 0:
                        found[tp] = max(m.timestamp()[1], found.get(tp, m.timestamp()[1]))
                    if first_only or offset + 1 >= ends[tp]:
                        pending.discard(tp)
        finally:
            client.unassign()
        return found


# Records looked at before a range's end for its watermark; the window grows by this factor while empty.
_LAST_WINDOW = 8
