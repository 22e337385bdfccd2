"""Offsets as Spark carries them, and the ranges a task reads.

Spark stores the streaming offset as `json.dumps` of what we return and compares offsets AS STRINGS,
so the dict is always built in one canonical order: topics sorted, partitions in numeric order. The
form is Spark's own Kafka source's, `{"topic": {"0": 42, "1": 7}}`, each the next offset to read.
When watermarks are tracked, their per-partition map rides along under the key "@watermarks" ('@'
cannot occur in a topic name), so it survives restarts in the checkpoint.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass

from pyspark.sql.datasource import InputPartition

# topic -> partition -> offset (or watermark, epoch ms)
Offsets = Mapping[str, Mapping[int, int]]
WATERMARKS = "@watermarks"


def _canonical(values: Offsets) -> dict[str, dict[str, int]]:
    return {t: {str(p): int(values[t][p]) for p in sorted(values[t])} for t in sorted(values)}


def to_json(offsets: Offsets, watermarks: Offsets | None = None) -> dict:
    """The canonical JSON-ready form: equal offsets always give equal `json.dumps` text."""
    out: dict = {WATERMARKS: _canonical(watermarks)} if watermarks else {}
    return out | _canonical(offsets)


def from_json(value: Mapping) -> tuple[dict[str, dict[int, int]], dict[str, dict[int, int]]]:
    """(offsets, watermarks) from what to_json made."""

    def parse(part: Mapping) -> dict[str, dict[int, int]]:
        return {t: {int(p): int(o) for p, o in parts.items()} for t, parts in part.items()}

    return parse({t: v for t, v in value.items() if t != WATERMARKS}), parse(value.get(WATERMARKS, {}))


@dataclass(frozen=True)
class PartitionRange(InputPartition):
    """Offsets [start, end) of one Kafka partition (or a slice of one): one Spark task's work.

    watermark_ms is the merged watermark when the range was planned, for the `watermark` column.
    """

    topic: str
    partition: int
    start: int
    end: int
    watermark_ms: int | None = None

    def __str__(self) -> str:
        return f"topic '{self.topic}' partition {self.partition} offsets [{self.start}, {self.end})"

    @property
    def size(self) -> int:
        return self.end - self.start

    def slices(self, count: int) -> list[PartitionRange]:
        """Split into `count` consecutive slices of near-equal size; order within each is kept."""
        count = max(1, min(count, self.size))
        bounds = [self.start + (self.size * i) // count for i in range(count + 1)]
        return [
            PartitionRange(self.topic, self.partition, a, b, self.watermark_ms) for a, b in itertools.pairwise(bounds)
        ]


def ranges_between(start: Offsets, end: Offsets, watermark_ms: int | None = None) -> list[PartitionRange]:
    """One range per partition that has records between start and end (start covers every partition)."""
    return [
        PartitionRange(topic, p, start[topic][p], stop, watermark_ms)
        for topic in sorted(end)
        for p, stop in sorted(end[topic].items())
        if stop > start[topic][p]
    ]


def split_ranges(
    ranges: list[PartitionRange], max_records: int | None, min_partitions: int | None
) -> list[PartitionRange]:
    """Slices of at most max_records; then, while fewer than min_partitions, larger ranges split further in
    proportion to their size (as Spark's Kafka source does for minPartitions)."""
    if max_records:
        ranges = [s for r in ranges for s in r.slices(math.ceil(r.size / max_records))]
    if min_partitions and len(ranges) < min_partitions:
        total = sum(r.size for r in ranges)
        ranges = [s for r in ranges for s in r.slices(max(1, round(min_partitions * r.size / total)))]
    return ranges
