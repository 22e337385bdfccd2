"""How a read's offset ranges become Spark tasks, as Spark's KafkaOffsetRangeCalculator: one range per partition
with records between a start and an end (PartitionRange), sliced (scan.split.max-records, minPartitions), then grouped
(scan.coalesce.max-records: RangeGroup, small ranges read one after the other by one task), as a BatchPlan says; a
micro-batch's plan is recorded in its end offset (read/offsets.py), so a replay gets the same tasks. The driver plans
them (read/source.py); an executor reads each task's ranges (read/task.py).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace

from pyspark.sql.datasource import InputPartition

from .offsets import BatchPlan, Offsets
from .spec import ReadSpec

# The floor of a bounded read's tasks (group_ranges), when its records would fit fewer. PySpark's Data Source API
# does not tell a reader the cluster's parallelism, and neither planning process (the batch planner's worker, the
# stream's runner) can learn it: this many lets a small cluster's cores all work and costs a larger one little,
# whose tasks the record budget multiplies. minPartitions sets another count (a task per range, split to it).
MIN_TASKS = 8


def plan_of(spec: ReadSpec, bounded: bool) -> BatchPlan:
    """How a read's ranges become tasks: split by scan.split.max-records / minPartitions (then a task per slice);
    otherwise grouped up to scan.coalesce.max-records, bounded reads (batch, Trigger.AvailableNow) into balanced
    tasks with a floor of MIN_TASKS, a running stream's micro-batch packed in order (its latency is about few
    tasks)."""
    if spec.split_max_records or spec.min_partitions or not spec.coalesce_max_records:
        return BatchPlan(spec.split_max_records, spec.min_partitions)
    return BatchPlan(coalesce=spec.coalesce_max_records, min_tasks=MIN_TASKS if bounded else None)


def planned_tasks(plan: BatchPlan, ranges: list[PartitionRange]) -> list[Task]:
    """The ranges split and grouped into Spark tasks as `plan` says."""
    split = split_ranges(ranges, plan.max_records, plan.min_partitions)
    if plan.min_tasks is None:
        return coalesce_ranges(split, plan.coalesce)
    return group_ranges(split, plan.coalesce, plan.min_tasks)


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


@dataclass(frozen=True)
class RangeGroup(InputPartition):
    """Ranges one Spark task reads one after the other (scan.coalesce.max-records), each as a task of its own
    would: its own fetch (data-loss checks, metadata columns), decoder and watermark, its own table reduction."""

    ranges: tuple[PartitionRange, ...]

    def __str__(self) -> str:
        return "; ".join(map(str, self.ranges))

    @property
    def size(self) -> int:
        return sum(r.size for r in self.ranges)


Task = PartitionRange | RangeGroup


def coalesce_ranges(ranges: list[PartitionRange], max_records: int | None) -> list[Task]:
    """Consecutive ranges packed into one task while their offsets add up to at most max_records (a larger range
    is a task of its own); a task per range without max_records. A micro-batch's fixed cost grows with its
    tasks (each starts Python workers' work and is scheduled in turn), so a few records of many partitions are
    cheaper read by one task."""
    if not max_records:
        return list(ranges)
    tasks: list[list[PartitionRange]] = []
    size = 0
    for r in ranges:
        if not tasks or size + r.size > max_records:
            tasks.append([])
            size = 0
        tasks[-1].append(r)
        size += r.size
    return [group[0] if len(group) == 1 else RangeGroup(tuple(group)) for group in tasks]


def group_ranges(ranges: list[PartitionRange], max_records: int | None, min_tasks: int) -> list[Task]:
    """A bounded read's tasks: as many as its records need at max_records a task, and at least min_tasks (or a
    task per range when there are fewer ranges), of near-equal records. A range of at least a task's share is a
    task of its own (these come first), so a few large partitions among many small ones keep the parallelism;
    the small ranges are cut, in order, into as many tasks as their records need and the floor still asks, at
    near-equal records each. A task per range without max_records.

    A task's fixed cost (scheduling, the Python worker's round trip) is ~40 ms here: a task per partition made a
    read of 512 small partitions cost 40x one of 4 partitions holding the same records."""
    total = sum(r.size for r in ranges)
    if not max_records or not total:
        return list(ranges)
    share = math.ceil(total / max(math.ceil(total / max_records), min(min_tasks, len(ranges))))
    groups: list[list[PartitionRange]] = [[r] for r in ranges if r.size >= share]
    small = [r for r in ranges if r.size < share]
    if small:
        small_total = max(1, sum(r.size for r in small))
        bins = min(len(small), max(math.ceil(small_total / share), min_tasks - len(groups), 1))
        packed: list[list[PartitionRange]] = [[] for _ in range(bins)]
        done = 0
        for r in small:  # each range to the task its middle record falls in, cutting the records in even parts
            packed[min(bins - 1, (2 * done + r.size) * bins // (2 * small_total))].append(r)
            done += r.size
        groups += [group for group in packed if group]
    return [group[0] if len(group) == 1 else RangeGroup(tuple(group)) for group in groups]


def clip_starts(tasks: list[Task], first: Offsets) -> list[Task]:
    """Each slice from its partition's first offset still in Kafka on. A slice wholly deleted stays, empty, so
    that every other slice keeps its place: a range is split and grouped before it is clipped, so the records
    that survive a deletion stay in the Spark task that had them when the batch was planned."""

    def clip(r: PartitionRange) -> PartitionRange:
        return replace(r, start=min(max(r.start, first[r.topic][r.partition]), r.end))

    return [RangeGroup(tuple(map(clip, t.ranges))) if isinstance(t, RangeGroup) else clip(t) for t in tasks]
