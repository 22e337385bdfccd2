"""Where a read starts and stops (Bound), parsed once from Flink's scan.startup.* / scan.bounded.* and from Spark's
startingOffsets, endingOffsets, startingTimestamp, endingTimestamp and ...OffsetsByTimestamp."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import Any

from ..errors import OptionError
from ..kernel.option_kinds import Option, OptionValues
from ..options.catalog_read import (
    ENDING_OFFSETS,
    ENDING_OFFSETS_BY_TIMESTAMP,
    ENDING_TIMESTAMP,
    SCAN_BOUNDED_MODE,
    SCAN_BOUNDED_SPECIFIC_OFFSETS,
    SCAN_BOUNDED_TIMESTAMP_MILLIS,
    SCAN_STARTUP_MODE,
    SCAN_STARTUP_SPECIFIC_OFFSETS,
    SCAN_STARTUP_TIMESTAMP_MILLIS,
    STARTING_OFFSETS,
    STARTING_OFFSETS_BY_TIMESTAMP,
    STARTING_OFFSETS_BY_TIMESTAMP_STRATEGY,
    STARTING_TIMESTAMP,
    STARTUP_MODES,
)
from ..options.kinds import EARLIEST, FLINK_OFFSETS_EXAMPLE, LATEST, PartitionValues, TopicValues
from ..options.topics import TopicSelection

__all__ = [
    "EARLIEST",
    "FROM_EARLIEST",
    "LATEST",
    "UNBOUNDED",
    "Bound",
    "BoundKind",
    "Fallback",
    "check_named_topics",
    "parse_bound",
]


class BoundKind(str, Enum):
    """Where a read starts or stops: Flink's scan.startup.mode / scan.bounded.mode, and Spark's spellings."""

    EARLIEST = "earliest"
    LATEST = "latest"
    GROUP = "group"  # the consumer group's committed offsets
    TIMESTAMP = "timestamp"  # one timestamp for every partition
    TIMESTAMPS = "timestamps"  # a timestamp per partition (Spark's ...OffsetsByTimestamp)
    SPECIFIC = "specific"  # an offset per partition
    NONE = "none"  # an unbounded stream's end

    def __str__(self) -> str:  # the value, on every Python (3.12 changed a mixed-in enum's format())
        return self.value


class Fallback(str, Enum):
    """Where a partition starts or stops when its bound gives it no offset (no record at a timestamp, no committed
    offset, not listed): its earliest or latest offset, or an error."""

    EARLIEST = "earliest"
    LATEST = "latest"
    ERROR = "error"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Bound:
    """Where a read starts or stops.

    specific: topic (or None: every topic) -> partition -> offset, where -2/-1 mean earliest/latest (kind
    SPECIFIC), or -> timestamp in epoch ms (kind TIMESTAMPS: Spark's ...OffsetsByTimestamp).
    """

    kind: BoundKind
    timestamp_ms: int | None = None
    specific: tuple[tuple[str | None, tuple[tuple[int, int], ...]], ...] = ()
    option: str = ""  # the option that gave the specific offsets or timestamps, for errors
    # A timestamp with no record at or after it: the partition's latest offset, or (Spark's
    # startingOffsetsByTimestampStrategy=error, its default for its own spellings of a start) an error.
    no_match: Fallback = Fallback.LATEST
    # Where partitions the specific offsets leave out start or stop, when not the caller's default: Flink's
    # scan.bounded.specific-offsets reads nothing of them (an end at the log start).
    unlisted: Fallback | None = None

    def __post_init__(self) -> None:  # the kinds' text (an option's value) is taken too
        object.__setattr__(self, "kind", BoundKind(self.kind))
        object.__setattr__(self, "no_match", Fallback(self.no_match))
        if self.unlisted is not None:
            object.__setattr__(self, "unlisted", Fallback(self.unlisted))

    def offset_for(self, topic: str, partition: int) -> int | None:
        for t, parts in self.specific:
            if t in (None, topic):
                for p, o in parts:
                    if p == partition:
                        return o
        return None


def check_named_topics(bound: Bound, topics: TopicSelection, option: str) -> None:
    """Spark's JSON offsets name topics: each must be one this read covers, or the offsets would be ignored."""
    for topic, _ in bound.specific:
        if topic is None:
            continue
        covered = re.fullmatch(topics.pattern, topic) if topics.pattern else topic in topics.names
        if not covered:
            raise OptionError(
                f"option '{option}' gives offsets for topic '{topic}', which this read does not cover "
                f"(it reads {topics.describe()})"
            )


# Flink's modes as Bound kinds.
_FLINK_MODES = dict(
    zip(
        STARTUP_MODES,
        (BoundKind.EARLIEST, BoundKind.LATEST, BoundKind.GROUP, BoundKind.TIMESTAMP, BoundKind.SPECIFIC),
        strict=True,
    )
)


@dataclass(frozen=True)
class _Side:
    """The options of one side of a read: Flink's mode and its two companions, and Spark's three spellings."""

    mode: Option[str]
    timestamp: Option[int | None]
    offsets: Option[PartitionValues | None]
    spark_offsets: Option[str | TopicValues | None]
    spark_timestamp: Option[int | None]
    spark_by_timestamp: Option[TopicValues | None]


_SIDES = {
    "startup": _Side(
        SCAN_STARTUP_MODE,
        SCAN_STARTUP_TIMESTAMP_MILLIS,
        SCAN_STARTUP_SPECIFIC_OFFSETS,
        STARTING_OFFSETS,
        STARTING_TIMESTAMP,
        STARTING_OFFSETS_BY_TIMESTAMP,
    ),
    "bounded": _Side(
        SCAN_BOUNDED_MODE,
        SCAN_BOUNDED_TIMESTAMP_MILLIS,
        SCAN_BOUNDED_SPECIFIC_OFFSETS,
        ENDING_OFFSETS,
        ENDING_TIMESTAMP,
        ENDING_OFFSETS_BY_TIMESTAMP,
    ),
}


def parse_bound(options: OptionValues, which: str, streaming: bool) -> Bound:
    """scan.startup.* / scan.bounded.* and their Spark twins startingOffsets/Timestamp, endingOffsets/..., from
    the values the catalog's kinds parsed."""
    side = _SIDES[which]
    bound = _bound(options, which, side)
    companions = ((side.timestamp, BoundKind.TIMESTAMP, "timestamp"), (side.offsets, BoundKind.SPECIFIC, ""))
    for option, kind, mode in companions:
        if options.given(option) and not (options.given(side.mode) and bound.kind == kind):
            suffix = option.name.rsplit(".", 1)[1]
            raise OptionError(
                f"option '{option.name}' applies to {side.mode.name}={mode or suffix} only: set that mode too, or "
                "leave the option out"
            )
    return bound


def _bound(options: OptionValues, which: str, side: _Side) -> Bound:
    mode = side.mode.name
    given = [
        o for o in (side.mode, side.spark_offsets, side.spark_timestamp, side.spark_by_timestamp) if options.given(o)
    ]
    if len(given) > 1:
        named = " and ".join(f"'{g.name}'" for g in given)
        raise OptionError(f"options {named} both set where to {_verb(which)}; give one")
    strategy = _timestamp_strategy(options, which, given)
    # Spark's options have no default: a value is one given.
    if (at := options.value(side.spark_timestamp)) is not None:
        return Bound(BoundKind.TIMESTAMP, timestamp_ms=at, option=side.spark_timestamp.name, no_match=strategy)
    if (stamps := options.value(side.spark_by_timestamp)) is not None:
        return Bound(BoundKind.TIMESTAMPS, specific=stamps, option=side.spark_by_timestamp.name, no_match=strategy)
    if (spark_offsets := options.value(side.spark_offsets)) is not None:  # 'earliest', 'latest' or per topic
        if isinstance(spark_offsets, str):
            return Bound(BoundKind(spark_offsets))
        return Bound(BoundKind.SPECIFIC, specific=spark_offsets, option=side.spark_offsets.name)
    if not options.given(side.mode):
        return UNBOUNDED
    kind = _FLINK_MODES[options.value(side.mode)]  # the catalog's choices are these modes' names
    if kind is BoundKind.TIMESTAMP:
        name = side.timestamp.name
        if not options.given(side.timestamp):
            raise OptionError(
                f"option '{name}' is required by the timestamp mode, e.g. '1700000000000' (epoch ms), since option "
                f"'{mode}' is timestamp"
            )
        return Bound(BoundKind.TIMESTAMP, timestamp_ms=options.value(side.timestamp), option=name)
    if kind is BoundKind.SPECIFIC:
        name = side.offsets.name
        offsets = options.value(side.offsets)
        if offsets is None or not offsets:
            raise OptionError(
                f"option '{name}' is required by the specific-offsets mode, e.g. '{FLINK_OFFSETS_EXAMPLE}', since "
                f"option '{mode}' is specific-offsets"
            )
        # Flink: "If an offset for a partition is not provided it will not consume from that partition."
        unlisted = Fallback.EARLIEST if which == "bounded" else None
        return Bound(BoundKind.SPECIFIC, specific=((None, offsets),), option=name, unlisted=unlisted)
    return Bound(kind)


def _timestamp_strategy(options: OptionValues, which: str, given: list[Option[Any]]) -> Fallback:
    """Spark's startingOffsetsByTimestampStrategy (error | latest; error by default) for its timestamp starts;
    an end, and Flink's timestamp mode, take the latest offset where no record is at or after the timestamp."""
    strategy = STARTING_OFFSETS_BY_TIMESTAMP_STRATEGY
    spark_start = which == "startup" and any(g in (STARTING_TIMESTAMP, STARTING_OFFSETS_BY_TIMESTAMP) for g in given)
    if not options.given(strategy):
        return Fallback(options.value(strategy)) if spark_start else Fallback.LATEST
    if which == "startup" and not spark_start:
        raise OptionError(
            f"option '{strategy.name}' applies to a start given by 'startingTimestamp' or "
            "'startingOffsetsByTimestamp': set one of them, or leave it out"
        )
    return Fallback(options.value(strategy)) if which == "startup" else Fallback.LATEST


def _verb(which: str) -> str:
    return "start" if which == "startup" else "stop"


# The defaults of a ReadSpec: from the earliest offset, and no end (a batch read ends at the latest offset).
FROM_EARLIEST = Bound(BoundKind.EARLIEST)
UNBOUNDED = Bound(BoundKind.NONE)
