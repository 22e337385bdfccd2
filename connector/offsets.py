"""Offsets as Spark carries them, and the ranges a task reads.

Spark stores the streaming offset as `json.dumps` of what we return and compares offsets AS STRINGS,
so the dict is always built in one canonical order: topics sorted, partitions in numeric order. The
form is Spark's own Kafka source's: `{"topic": {"0": 42, "1": 7}}`, each the next offset to read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pyspark.sql.datasource import InputPartition

# topic -> partition -> next offset to read
Offsets = Mapping[str, Mapping[int, int]]


def to_json(offsets: Offsets) -> dict[str, dict[str, int]]:
    """The canonical JSON-ready form: equal offsets always give equal `json.dumps` text."""
    return {
        topic: {str(p): int(offsets[topic][p]) for p in sorted(offsets[topic])} for topic in sorted(offsets)
    }


def from_json(value: Mapping[str, Mapping[str, int]]) -> dict[str, dict[int, int]]:
    return {topic: {int(p): int(o) for p, o in parts.items()} for topic, parts in value.items()}


@dataclass(frozen=True)
class PartitionRange(InputPartition):
    """Offsets [start, end) of one Kafka partition: the unit of work of one Spark task."""

    topic: str
    partition: int
    start: int
    end: int

    def __str__(self) -> str:
        return f"topic '{self.topic}' partition {self.partition} offsets [{self.start}, {self.end})"


def ranges_between(start: Offsets, end: Offsets) -> list[PartitionRange]:
    """One range per partition that has records between start and end (start covers every partition)."""
    return [
        PartitionRange(topic, p, start[topic][p], stop)
        for topic in sorted(end)
        for p, stop in sorted(end[topic].items())
        if stop > start[topic][p]
    ]
