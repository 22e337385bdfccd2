"""Driver side: per-partition watermarks, merged by minimum, and alignment of partitions in record time.

Spark's watermark is global (max event time seen minus the delay), so a partition that lags in record
time has its rows dropped as late. Here each partition's watermark is the largest record timestamp it
has been read up to; the merged watermark is their minimum over partitions that are not idle. With
`scan.watermark.alignment.max-drift`, each micro-batch's end offset of every partition is held at the
first record past (merged watermark + drift), so no partition runs ahead of the slowest active one.

The driver never sees records, so it asks the broker: the timestamp of the record at a partition's
end-1 (the last one admitted) and at its start (the next one to read), and offsets-for-times for the cap.
"""

from __future__ import annotations

import logging
import time

from confluent_kafka import KafkaError, TopicPartition
from confluent_kafka.admin import OffsetSpec

from connector.kafka_clients import consumer
from connector.offsets import Offsets
from connector.planning import Planner

log = logging.getLogger("upsert_kafka")

TP = tuple[str, int]


class WatermarkTracker:
    def __init__(self, planner: Planner) -> None:
        self.planner, self.spec = planner, planner.spec
        self._consumer = None
        self._last_advance: dict[TP, float] = {}

    def __getstate__(self) -> dict:
        return {"planner": self.planner, "spec": self.spec, "_consumer": None, "_last_advance": {}}

    # -- watermarks ------------------------------------------------------------------------------

    def advance(self, start: Offsets, end: Offsets, watermarks: Offsets) -> dict[str, dict[int, int]]:
        """Watermarks after reading [start, end): each partition's previous one, raised to the timestamp of
        the last record admitted."""
        now = time.monotonic()
        moved = [(t, p) for t, ps in end.items() for p, e in ps.items() if e > start.get(t, {}).get(p, e)]
        for tp in moved:
            self._last_advance[tp] = now
        last = self._timestamps({tp: end[tp[0]][tp[1]] - 1 for tp in moved}, before=end)
        out = {t: dict(ps) for t, ps in watermarks.items()}
        for (t, p), ts in last.items():
            out.setdefault(t, {})[p] = max(ts, out.get(t, {}).get(p, ts))
        return out

    def merged(self, watermarks: Offsets) -> int | None:
        """The minimum over partitions that are not idle (all of them when every one is idle)."""
        now, idle = time.monotonic(), self.spec.watermark_idle_timeout_s
        known = {(t, p): w for t, ps in watermarks.items() for p, w in ps.items()}
        for tp in known:
            self._last_advance.setdefault(tp, now)
        active = [w for tp, w in known.items() if idle is None or now - self._last_advance[tp] < idle]
        values = active or list(known.values())
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
        threshold = max(bases) + self.spec.alignment_max_drift_ms
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

    def _timestamps(self, positions: dict[TP, int], before: Offsets) -> dict[TP, int]:
        """Timestamp of the first record at or after each position, if it lies before `before`'s offset."""
        if not positions:
            return {}
        if self._consumer is None:
            self._consumer = consumer(self.spec.kafka)
        client = self._consumer
        client.assign([TopicPartition(t, p, o) for (t, p), o in positions.items()])
        found: dict[TP, int] = {}
        pending = set(positions)
        deadline = time.monotonic() + self.spec.kafka.timeout_s
        while pending and time.monotonic() < deadline:
            for m in client.consume(num_messages=len(pending), timeout=0.5):
                tp = (m.topic(), m.partition())
                if tp not in pending:
                    continue
                error = m.error()
                if error is not None and error.code() != KafkaError._PARTITION_EOF:
                    continue
                pending.discard(tp)
                if error is None and m.offset() < before[tp[0]][tp[1]] and m.timestamp()[1] >= 0:
                    found[tp] = m.timestamp()[1]
        client.unassign()
        return found
