"""Deletes that compaction may have removed before a stream read them (read/README.md, Deletes that compaction
cannot lose).

On a compacted topic the log cleaner removes a tombstone once `delete.retention.ms` (D) has passed since it first
cleaned it (Kafka 3.1+, KIP-534: the first cleaning stamps the tombstone's batch with the horizon cleaning time + D;
a later cleaning past the horizon drops it), and that first cleaning also drops every earlier record of the key. So
a stream that read an earlier value of a key but not yet its tombstone misses the delete only if the tombstone was
first cleaned after the stream read that value and D has passed since. The rule, proven from two facts:

- The cleaner never cleans at or past the last stable offset (nor the active segment): when a look-up at time t
  finds the partition's last stable offset at L, no record at offset >= L was cleaned before t. Such a fact is a
  *mark* (L, t).
- A record this query read at time r was still in the log at r, so a tombstone whose first cleaning dropped it was
  first cleaned after r: the time a partition's first range was planned is a mark at that range's start, for what
  the query reads (a delete of a key it never read changes none of its rows).

A stream at position o (its next offset) reads a partition safely while now < t + D for the newest mark (L, t) with
L <= o: no tombstone it is about to read can have been removed yet. The stream keeps its marks in its offsets
(`StreamOffset.marks`, one per planned micro-batch and per partition, plus a few ahead of its position for a stream
that lags) and checks them when a micro-batch is planned and when one is replayed. A partition is at risk when its
topic is compacted (cleanup.policy holds `compact`) and now >= t + D - MARGIN; a topic whose configuration cannot
be read counts as compacted with D = 0, a position without a mark (a checkpoint older than the marks) as marked at
time 0: both fail closed. What the admin API cannot tell: how far the cleaner has got (its first dirty offset, the
segments, each tombstone's horizon), nor D at the time of an earlier cleaning; record timestamps are the producers'
and bound nothing. So the rule assumes the cleaner cleaned everything it was allowed to as early as it could.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone

from ..options.catalog_read import SCAN_COMPACTION_LOST_DELETES

# (offset, wall-clock ms): no tombstone at or after the offset that this query could miss was first cleaned before
# that time (either fact above).
Mark = tuple[int, int]
Marks = tuple[Mark, ...]

MAX_AHEAD = 4  # marks kept past a lagging stream's position (more only sharpen its stamp a little)
MARGIN_MS = 60_000  # at most this much (a tenth of D when shorter) before D: the batch's reads, clock skew

COMPACT = "compact"


def frontier(marks: Iterable[Mark]) -> Marks:
    """The marks that matter, by offset: a mark is dropped when another at a lower or equal offset is as late."""
    out: list[Mark] = []
    for offset, at in sorted(marks, key=lambda m: (m[0], -m[1])):
        if not out or at > out[-1][1]:
            out.append((offset, at))
    return tuple(out)


def stamp(marks: Marks, position: int) -> int:
    """The latest time before which no record at or after `position` can have been cleaned; 0 (the epoch: unknown)
    without a mark at or below it."""
    return max((at for offset, at in marks if offset <= position), default=0)


def advance(marks: Iterable[Mark], position: int, ahead: int = MAX_AHEAD) -> Marks:
    """The marks a micro-batch starting at `position` records: one at the position (its stamp) and at most `ahead`
    past it. A mark ahead is dropped where the loss is smallest (the least time gained over the mark before it), so
    a lagging stream's stamp trails its true age by about its lag divided by `ahead`."""
    kept = frontier(marks)
    out = [(position, stamp(kept, position))]
    out.extend(m for m in kept if m[0] > position)
    while len(out) > ahead + 1:
        gains = [out[i][1] - out[i - 1][1] for i in range(1, len(out) - 1)]  # never the newest one
        del out[1 + gains.index(min(gains))]
    return tuple(out)


@dataclass(frozen=True)
class Cleanup:
    """A topic's cleanup settings as the brokers tell them; `known` False when they could not be read."""

    known: bool
    compacted: bool = True
    delete_retention_ms: int = 0

    @classmethod
    def from_config(cls, config: Mapping[str, str | None] | None) -> Cleanup:
        """From describe_configs' answer (name -> value); None (not readable) is unknown, hence at risk."""
        if config is None:
            return cls(known=False)
        policy = {p.strip() for p in (config.get("cleanup.policy") or "").split(",")}
        retention = config.get("delete.retention.ms")
        if retention is None:  # hidden: unknown
            return cls(known=False)
        return cls(True, COMPACT in policy, int(retention))


def margin_ms(delete_retention_ms: int) -> int:
    return min(delete_retention_ms // 10, MARGIN_MS)


def at_risk(cleanup: Cleanup, since_ms: int, now_ms: int) -> bool:
    """Whether tombstones at a position stamped `since_ms` may be gone at `now_ms`."""
    if not cleanup.known:
        return True
    if not cleanup.compacted:
        return False
    return now_ms - since_ms >= cleanup.delete_retention_ms - margin_ms(cleanup.delete_retention_ms)


@dataclass(frozen=True)
class Risk:
    """A partition whose micro-batch may miss deletes."""

    topic: str
    partition: int
    offset: int  # where the batch starts reading it
    since_ms: int
    cleanup: Cleanup

    def describe(self, now_ms: int) -> str:
        where = f"topic '{self.topic}' partition {self.partition} from offset {self.offset}"
        if not self.cleanup.known:
            return (
                f"{where}: the topic's cleanup.policy and delete.retention.ms cannot be read (grant this client's "
                "user DESCRIBE_CONFIGS on the topic)"
            )
        if self.since_ms == 0:
            seen = "this query's offsets record no time for it (a checkpoint written before this check)"
        else:
            at = datetime.fromtimestamp(self.since_ms / 1000, timezone.utc).isoformat(timespec="seconds")
            seen = f"records there may have been cleanable since {at}, {(now_ms - self.since_ms) / 1000:.0f} s ago"
        retention = self.cleanup.delete_retention_ms
        return (
            f"{where}: {seen}, and the topic (cleanup.policy=compact) drops tombstones {retention} ms after "
            "cleaning them (delete.retention.ms)"
        )


def risks(
    begin: Mapping[str, Mapping[int, int]],
    end: Mapping[str, Mapping[int, int]],
    marks: Mapping[str, Mapping[int, Marks]],
    cleanup: Mapping[str, Cleanup],
    now_ms: int,
) -> list[Risk]:
    """The partitions a micro-batch [begin, end) reads that may miss deletes."""
    found = []
    for topic, ps in sorted(begin.items()):
        for p, offset in sorted(ps.items()):
            if offset >= end.get(topic, {}).get(p, offset):
                continue  # nothing to read there
            since = stamp(marks.get(topic, {}).get(p, ()), offset)
            if at_risk(cleanup[topic], since, now_ms):
                found.append(Risk(topic, p, offset, since, cleanup[topic]))
    return found


OPTION = SCAN_COMPACTION_LOST_DELETES.name
WAYS_ON = (
    "rebuild the tables from a table read (read.mode=table) or from a new checkpoint starting at the earliest "
    f"offset; or set option '{OPTION}' to warn"
)


def message(found: list[Risk], now_ms: int) -> str:
    """What may be lost, for data_loss (which adds the ways on)."""
    listed = "; ".join(r.describe(now_ms) for r in found)
    return (
        f"deletes may be lost in {listed}. The log cleaner may have removed tombstones this changelog stream has "
        "not read yet, so tables built from it (normalized_changelog, aggregates, sinks) may keep deleted keys"
    )
