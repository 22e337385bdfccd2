"""Where a read starts and stops (Bound), parsed once from Flink's scan.startup.* / scan.bounded.* and from Spark's
startingOffsets, endingOffsets, startingTimestamp, endingTimestamp and ...OffsetsByTimestamp."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import OptionError
from ..options.catalog import default_of
from ..options.common import TopicSelection

# Spark's JSON offsets use these for "earliest" and "latest".
EARLIEST, LATEST = -2, -1


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


# Spark hands options over lower-cased; errors name them as users write them.
_SPARK_SPELLING = {
    n.lower(): n
    for n in (
        "startingOffsets",
        "endingOffsets",
        "startingTimestamp",
        "endingTimestamp",
        "minPartitions",
        "minOffsetsPerTrigger",
        "maxTriggerDelay",
        "startingOffsetsByTimestamp",
        "endingOffsetsByTimestamp",
        "groupIdPrefix",
    )
}


def _shown(name: str) -> str:
    return _SPARK_SPELLING.get(name, name)


_FLINK_MODES = {
    "earliest-offset": "earliest",
    "latest-offset": "latest",
    "group-offsets": "group",
    "timestamp": "timestamp",
    "specific-offsets": "specific",
}


_SPECIFIC = re.compile(r"^\s*partition\s*:\s*(\d+)\s*,\s*offset\s*:\s*(\d+)\s*$")


def parse_bound(options: Mapping[str, str], which: str, streaming: bool) -> Bound:
    """scan.startup.* / scan.bounded.* and their Spark twins startingOffsets/Timestamp, endingOffsets/..."""
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


def _bound(options: Mapping[str, str], which: str) -> Bound:
    mode_option = f"scan.{which}.mode"
    prefix = "starting" if which == "startup" else "ending"
    spark_offsets, spark_ts, spark_by_ts = (f"{prefix}offsets", f"{prefix}timestamp", f"{prefix}offsetsbytimestamp")
    given = [o for o in (mode_option, spark_offsets, spark_ts, spark_by_ts) if o in options]
    if len(given) > 1:
        named = " and ".join(f"'{_shown(g)}'" for g in given)
        raise OptionError(f"options {named} both set where to {_verb(which)}; give one")
    strategy = _timestamp_strategy(options, which, given)
    if spark_ts in options:
        return Bound("timestamp", timestamp_ms=_millis(options, spark_ts), option=_shown(spark_ts), no_match=strategy)
    if spark_by_ts in options:
        return _spark_timestamps(options[spark_by_ts], _shown(spark_by_ts), strategy)
    if spark_offsets in options:
        return _spark_offsets(options[spark_offsets], _shown(spark_offsets), ending=which == "bounded")
    raw = options.get(mode_option)
    if raw is None:
        return Bound("none")
    kind = _FLINK_MODES.get(raw.strip().lower())
    if kind is None or (which == "bounded" and kind == "earliest"):
        valid = [m for m in _FLINK_MODES if which == "startup" or m != "earliest-offset"]
        raise OptionError(f"option '{mode_option}' must be one of {', '.join(valid)}, got '{raw}'")
    if kind == "timestamp":
        name = f"scan.{which}.timestamp-millis"
        return Bound("timestamp", timestamp_ms=_millis(options, name), option=name)
    if kind == "specific":
        name = f"scan.{which}.specific-offsets"
        # Flink: "If an offset for a partition is not provided it will not consume from that partition."
        unlisted = "earliest" if which == "bounded" else None
        return Bound("specific", specific=((None, _flink_specific(options, name)),), option=name, unlisted=unlisted)
    return Bound(kind)


_STRATEGY = "startingoffsetsbytimestampstrategy"


def _timestamp_strategy(options: Mapping[str, str], which: str, given: list[str]) -> str:
    """Spark's startingOffsetsByTimestampStrategy (error | latest; error by default) for its timestamp starts;
    an end, and Flink's timestamp mode, take the latest offset where no record is at or after the timestamp."""
    spark_start = which == "startup" and any(g in ("startingtimestamp", "startingoffsetsbytimestamp") for g in given)
    raw = options.get(_STRATEGY)
    if raw is None:
        return default_of("startingOffsetsByTimestampStrategy") if spark_start else "latest"
    if which == "startup" and not spark_start:
        raise OptionError(
            "option 'startingOffsetsByTimestampStrategy' applies to a start given by 'startingTimestamp' or "
            "'startingOffsetsByTimestamp': set one of them, or leave it out"
        )
    if which == "bounded":
        return "latest"
    if raw.strip().lower() not in ("error", "latest"):
        raise OptionError(f"option 'startingOffsetsByTimestampStrategy' must be error or latest, got '{raw}'")
    return raw.strip().lower()


def _verb(which: str) -> str:
    return "start" if which == "startup" else "stop"


def _millis(options: Mapping[str, str], name: str) -> int:
    raw = options.get(name)
    if raw is None:
        mode = name.rsplit(".", 1)[0] + ".mode"
        raise OptionError(
            f"option '{name}' is required by the timestamp mode, e.g. '1700000000000' (epoch ms), since option "
            f"'{mode}' is timestamp"
        )
    if not raw.strip().isdigit():
        raise OptionError(f"option '{_shown(name)}' must be epoch milliseconds, got '{raw}'")
    return int(raw)


def _flink_specific(options: Mapping[str, str], name: str) -> tuple[tuple[int, int], ...]:
    raw = options.get(name, "").strip()
    example = "partition:0,offset:42;partition:1,offset:300"
    if not raw:
        mode = name.rsplit(".", 1)[0] + ".mode"
        raise OptionError(
            f"option '{name}' is required by the specific-offsets mode, e.g. '{example}', since option '{mode}' is "
            "specific-offsets"
        )
    pairs = {}
    for part in filter(None, (p.strip() for p in raw.split(";"))):
        match = _SPECIFIC.match(part)
        if not match:
            raise OptionError(f"option '{name}': cannot read '{part}'; expected the form '{example}'")
        partition = int(match.group(1))
        if partition in pairs:
            raise OptionError(f"option '{name}' names partition {partition} twice")
        pairs[partition] = int(match.group(2))
    return tuple(sorted(pairs.items()))


def _spark_offsets(raw: str, name: str, ending: bool) -> Bound:
    text = raw.strip()
    allowed = ("latest",) if ending else ("earliest", "latest")
    if text.lower() in allowed:
        return Bound(text.lower())
    lowest = LATEST if ending else EARLIEST  # Spark's rule: a read cannot end at the earliest offset
    example = '{"topic":{"0":23,"1":-2}} (-2: earliest, -1: latest)'
    try:
        parsed = json.loads(text)
        specific = tuple(
            (str(topic), tuple(sorted((int(p), _offset(o, lowest)) for p, o in parts.items())))
            for topic, parts in sorted(parsed.items())
        )
    except (ValueError, AttributeError, TypeError):
        words = ", ".join(allowed)
        raise OptionError(
            f"option '{name}' must be {words} or JSON like {example}, with whole offsets of at least {lowest}; "
            f"got '{raw}'"
        ) from None
    return Bound("specific", specific=specific, option=name)


def _spark_timestamps(raw: str, name: str, no_match: str) -> Bound:
    example = '{"topic":{"0":1700000000000,"1":1700000000000}} (epoch ms per partition)'
    try:
        parsed = json.loads(raw.strip())
        specific = tuple(
            (str(topic), tuple(sorted((int(p), _offset(ts, 0)) for p, ts in parts.items())))
            for topic, parts in sorted(parsed.items())
        )
    except (ValueError, AttributeError, TypeError):
        raise OptionError(f"option '{name}' must be JSON like {example}; got '{raw}'") from None
    return Bound("timestamps", specific=specific, option=name, no_match=no_match)


def _offset(value: object, lowest: int) -> int:
    if type(value) is not int or value < lowest:  # JSON 1.5 or true is no offset
        raise ValueError(value)
    return value


# The defaults of a ReadSpec: from the earliest offset, and no end (a batch read ends at the latest offset).
FROM_EARLIEST = Bound("earliest")
UNBOUNDED = Bound("none")
