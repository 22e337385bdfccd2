"""Where a read starts and stops (Bound), parsed once from Flink's scan.startup.* / scan.bounded.* and from Spark's
startingOffsets, endingOffsets, startingTimestamp, endingTimestamp and ...OffsetsByTimestamp."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import OptionError
from ..formats.option_kinds import OptionValues
from ..options.catalog_read import STARTUP_MODES
from ..options.kinds import EARLIEST, FLINK_OFFSETS_EXAMPLE, LATEST
from ..options.topics import TopicSelection

__all__ = ["EARLIEST", "FROM_EARLIEST", "LATEST", "UNBOUNDED", "Bound", "check_named_topics", "parse_bound"]


@dataclass(frozen=True)
class Bound:
    """Where a read starts or stops.

    kind: earliest | latest | group | timestamp | specific | timestamps (| none: an unbounded stream's end).
    specific: topic (or None: every topic) -> partition -> offset, where -2/-1 mean earliest/latest (kind
    specific), or -> timestamp in epoch ms (kind timestamps: Spark's ...OffsetsByTimestamp).
    """

    kind: str
    timestamp_ms: int | None = None
    specific: tuple[tuple[str | None, tuple[tuple[int, int], ...]], ...] = ()
    option: str = ""  # the option that gave the specific offsets or timestamps, for errors
    # A timestamp with no record at or after it: the partition's latest offset, or (Spark's
    # startingOffsetsByTimestampStrategy=error, its default for its own spellings of a start) an error.
    no_match: str = "latest"
    # Where partitions the specific offsets leave out start or stop, when not the caller's default: Flink's
    # scan.bounded.specific-offsets reads nothing of them (an end at the log start).
    unlisted: str | None = None

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
_FLINK_MODES = dict(zip(STARTUP_MODES, ("earliest", "latest", "group", "timestamp", "specific"), strict=True))


def parse_bound(options: OptionValues, which: str, streaming: bool) -> Bound:
    """scan.startup.* / scan.bounded.* and their Spark twins startingOffsets/Timestamp, endingOffsets/..., from
    the values the catalog's kinds parsed."""
    bound = _bound(options, which)
    mode_option = f"scan.{which}.mode"
    for suffix, kind, mode in (("timestamp-millis", "timestamp", "timestamp"), ("specific-offsets", "specific", "")):
        name = f"scan.{which}.{suffix}"
        if name in options and not (mode_option in options and bound.kind == kind):
            raise OptionError(
                f"option '{name}' applies to {mode_option}={mode or suffix} only: set that mode too, or leave the "
                "option out"
            )
    return bound


def _bound(options: OptionValues, which: str) -> Bound:
    mode_option = f"scan.{which}.mode"
    prefix = "starting" if which == "startup" else "ending"
    spark_offsets, spark_ts, spark_by_ts = (f"{prefix}Offsets", f"{prefix}Timestamp", f"{prefix}OffsetsByTimestamp")
    given = [o for o in (mode_option, spark_offsets, spark_ts, spark_by_ts) if o in options]
    if len(given) > 1:
        named = " and ".join(f"'{g}'" for g in given)
        raise OptionError(f"options {named} both set where to {_verb(which)}; give one")
    strategy = _timestamp_strategy(options, which, given)
    if spark_ts in options:
        return Bound("timestamp", timestamp_ms=options.value(spark_ts), option=spark_ts, no_match=strategy)
    if spark_by_ts in options:
        return Bound("timestamps", specific=options.value(spark_by_ts), option=spark_by_ts, no_match=strategy)
    if spark_offsets in options:
        offsets = options.value(spark_offsets)  # 'earliest', 'latest' or offsets per topic
        if isinstance(offsets, str):
            return Bound(offsets)
        return Bound("specific", specific=offsets, option=spark_offsets)
    if mode_option not in options:
        return Bound("none")
    kind = _FLINK_MODES[options.value(mode_option)]  # the catalog's choices are these modes' names
    if kind == "timestamp":
        name = f"scan.{which}.timestamp-millis"
        if name not in options:
            raise OptionError(
                f"option '{name}' is required by the timestamp mode, e.g. '1700000000000' (epoch ms), since option "
                f"'{mode_option}' is timestamp"
            )
        return Bound("timestamp", timestamp_ms=options.value(name), option=name)
    if kind == "specific":
        name = f"scan.{which}.specific-offsets"
        offsets = options.value(name)
        if not offsets:
            raise OptionError(
                f"option '{name}' is required by the specific-offsets mode, e.g. '{FLINK_OFFSETS_EXAMPLE}', since "
                f"option '{mode_option}' is specific-offsets"
            )
        # Flink: "If an offset for a partition is not provided it will not consume from that partition."
        unlisted = "earliest" if which == "bounded" else None
        return Bound("specific", specific=((None, offsets),), option=name, unlisted=unlisted)
    return Bound(kind)


_STRATEGY = "startingOffsetsByTimestampStrategy"


def _timestamp_strategy(options: OptionValues, which: str, given: list[str]) -> str:
    """Spark's startingOffsetsByTimestampStrategy (error | latest; error by default) for its timestamp starts;
    an end, and Flink's timestamp mode, take the latest offset where no record is at or after the timestamp."""
    spark_start = which == "startup" and any(g in ("startingTimestamp", "startingOffsetsByTimestamp") for g in given)
    if _STRATEGY not in options:
        return options.value(_STRATEGY) if spark_start else "latest"
    if which == "startup" and not spark_start:
        raise OptionError(
            f"option '{_STRATEGY}' applies to a start given by 'startingTimestamp' or 'startingOffsetsByTimestamp': "
            "set one of them, or leave it out"
        )
    return options.value(_STRATEGY) if which == "startup" else "latest"


def _verb(which: str) -> str:
    return "start" if which == "startup" else "stop"


# The defaults of a ReadSpec: from the earliest offset, and no end (a batch read ends at the latest offset).
FROM_EARLIEST = Bound("earliest")
UNBOUNDED = Bound("none")
