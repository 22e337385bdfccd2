"""The connector's kinds of option value beyond the formats' (kernel/option_kinds.py): Flink's durations and memory
sizes, Spark's time strings, epoch milliseconds, and the offsets where a read starts or stops (Flink's
`partition:0,offset:42;...` and Spark's JSON). Each parses and checks a value once; the catalog declares which
option takes which."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from ..kernel.option_kinds import Invalid, Kind, must_be

# Spark's JSON offsets use these for "earliest" and "latest".
EARLIEST, LATEST = -2, -1

# Flink's duration grammar (TimeUtils.parseDuration): a number and an optional unit; a bare number is ms.
_UNIT_SECONDS = {
    **dict.fromkeys(("ns", "nano", "nanos", "nanosecond", "nanoseconds"), 1e-9),
    **dict.fromkeys(("us", "µs", "micro", "micros", "microsecond", "microseconds"), 1e-6),
    **dict.fromkeys(("ms", "milli", "millis", "millisecond", "milliseconds"), 1e-3),
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), 1.0),
    **dict.fromkeys(("min", "mins", "minute", "minutes"), 60.0),
    **dict.fromkeys(("h", "hour", "hours"), 3600.0),
    **dict.fromkeys(("d", "day", "days"), 86400.0),
}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zµ]*)\s*$")


@dataclass(frozen=True)
class Duration(Kind[float]):
    """A Flink duration ('30 s', '500 ms', '2 min'; a bare number is milliseconds), in seconds; positive, or zero
    too with `allow_zero`."""

    allow_zero: bool = False

    @property
    def type_name(self) -> str:  # type: ignore[override]
        return "duration" + (" (or 0)" if self.allow_zero else "")

    def parse(self, raw: str) -> float:
        match = _DURATION.match(raw.lower())
        if not match or (match.group(2) and match.group(2) not in _UNIT_SECONDS):
            raise must_be("a duration such as '30 s', '500 ms' or '2 min'", raw)
        seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2) or "ms"]
        if seconds < 0 or (seconds == 0 and not self.allow_zero):
            raise must_be(f"{'zero or ' if self.allow_zero else ''}positive", raw)
        return seconds


# Flink's MemorySize grammar: a number and an optional unit; binary multiples; a bare number is bytes.
_UNIT_BYTES = {
    **dict.fromkeys(("b", "bytes"), 1),
    **dict.fromkeys(("k", "kb", "kibibytes"), 1 << 10),
    **dict.fromkeys(("m", "mb", "mebibytes"), 1 << 20),
    **dict.fromkeys(("g", "gb", "gibibytes"), 1 << 30),
    **dict.fromkeys(("t", "tb", "tebibytes"), 1 << 40),
}
_SIZE = re.compile(r"^\s*(\d+)\s*([a-z]*)\s*$")


@dataclass(frozen=True)
class MemorySize(Kind[int]):
    """A Flink memory size ('256 mb', '1 gb', '64m', '512 kb'; a bare number is bytes), in bytes, positive."""

    type_name: str = "memory size"

    def parse(self, raw: str) -> int:
        match = _SIZE.match(raw.lower())
        if not match or (match.group(2) and match.group(2) not in _UNIT_BYTES) or int(match.group(1)) < 1:
            raise must_be("a positive memory size such as '256 mb', '1 gb' or '64m'", raw)
        return int(match.group(1)) * _UNIT_BYTES[match.group(2) or "b"]


_SPARK_TIME = re.compile(r"^\s*(\d+)\s*(ms|s|m|min|h|d)?\s*$")
_SPARK_UNIT_SECONDS = {"ms": 1e-3, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


@dataclass(frozen=True)
class SparkTime(Kind[float]):
    """A Spark time string ('15m', '30s', '500ms', '1h'; a bare number is milliseconds), in seconds, positive."""

    type_name: str = "Spark time string"

    def parse(self, raw: str) -> float:
        match = _SPARK_TIME.match(raw.lower())
        if not match or int(match.group(1)) == 0:
            raise must_be("a positive time such as '15m', '30s' or '500ms'", raw)
        return int(match.group(1)) * _SPARK_UNIT_SECONDS[match.group(2) or "ms"]


@dataclass(frozen=True)
class EpochMillis(Kind[int]):
    type_name: str = "epoch ms"

    def parse(self, raw: str) -> int:
        if not raw.strip().isdigit():
            raise must_be("epoch milliseconds", raw)
        return int(raw)


PartitionValues = tuple[tuple[int, int], ...]  # (partition, offset or timestamp), sorted
TopicValues = tuple[tuple[str, PartitionValues], ...]  # per topic, sorted

_FLINK_SPECIFIC = re.compile(r"^\s*partition\s*:\s*(\d+)\s*,\s*offset\s*:\s*(\d+)\s*$")
FLINK_OFFSETS_EXAMPLE = "partition:0,offset:42;partition:1,offset:300"


@dataclass(frozen=True)
class FlinkOffsets(Kind[PartitionValues]):
    """Flink's specific offsets, `partition:0,offset:42;partition:1,offset:300`: (partition, offset) pairs; blank:
    none (the mode that needs them says so)."""

    type_name: str = "offsets (`partition:0,offset:42;...`)"

    def parse(self, raw: str) -> PartitionValues:
        pairs: dict[int, int] = {}
        for part in filter(None, (p.strip() for p in raw.split(";"))):
            match = _FLINK_SPECIFIC.match(part)
            if not match:
                raise Invalid(f": cannot read '{part}'; expected the form '{FLINK_OFFSETS_EXAMPLE}'")
            partition = int(match.group(1))
            if partition in pairs:
                raise Invalid(f"names partition {partition} twice")
            pairs[partition] = int(match.group(2))
        return tuple(sorted(pairs.items()))


@dataclass(frozen=True)
class SparkOffsets(Kind[str | TopicValues]):
    """Spark's startingOffsets / endingOffsets: `earliest`, `latest` (an end: `latest` only) or JSON
    `{"topic":{"0":23,"1":-2}}` (-2 earliest, -1 latest; an end cannot be -2): the word, or offsets per topic."""

    ending: bool = False

    @property
    def type_name(self) -> str:  # type: ignore[override]
        return ("" if self.ending else "`earliest` / ") + "`latest` or JSON offsets"

    def parse(self, raw: str) -> str | TopicValues:
        text = raw.strip()
        allowed = ("latest",) if self.ending else ("earliest", "latest")
        if text.lower() in allowed:
            return text.lower()
        lowest = LATEST if self.ending else EARLIEST  # Spark's rule: a read cannot end at the earliest offset
        try:
            return _per_topic(text, lowest)
        except (ValueError, AttributeError, TypeError):
            example = '{"topic":{"0":23,"1":-2}} (-2: earliest, -1: latest)'
            raise Invalid(
                f"must be {', '.join(allowed)} or JSON like {example}, with whole offsets of at least {lowest}; "
                f"got '{raw}'"
            ) from None


@dataclass(frozen=True)
class SparkTimestamps(Kind[TopicValues]):
    """Spark's ...OffsetsByTimestamp: JSON `{"topic":{"0":1700000000000}}`, epoch ms per partition."""

    type_name: str = "JSON timestamps"

    def parse(self, raw: str) -> TopicValues:
        try:
            return _per_topic(raw.strip(), 0)
        except (ValueError, AttributeError, TypeError):
            example = '{"topic":{"0":1700000000000,"1":1700000000000}} (epoch ms per partition)'
            raise Invalid(f"must be JSON like {example}; got '{raw}'") from None


def _per_topic(text: str, lowest: int) -> TopicValues:
    parsed = json.loads(text)
    return tuple(
        (str(topic), tuple(sorted((int(p), _whole(v, lowest)) for p, v in parts.items())))
        for topic, parts in sorted(parsed.items())
    )


def _whole(value: object, lowest: int) -> int:
    if type(value) is not int or value < lowest:  # JSON 1.5 or true is no offset
        raise ValueError(value)
    return value


@dataclass(frozen=True)
class FlinkTimestamp:
    """A Flink timestamp type a Spark column stands for: TIMESTAMP(p) (`zoned` False) or TIMESTAMP_LTZ(p)."""

    zoned: bool
    precision: int

    def __str__(self) -> str:
        return f"TIMESTAMP{'_LTZ' if self.zoned else ''}({self.precision})"


ColumnPath = tuple[str, ...]  # a column, or a field inside STRUCT columns
_NAME = r"(?:`(?:[^`]|``)+`|[A-Za-z_][A-Za-z0-9_$]*)"
_COLUMN_TYPE = re.compile(
    rf"\s*(?P<path>{_NAME}(?:\s*\.\s*{_NAME})*)\s+(?P<type>TIMESTAMP_LTZ|TIMESTAMP)(?:\s*\(\s*(?P<p>\d+)\s*\))?"
    r"(?P<local>\s+WITH\s+LOCAL\s+TIME\s+ZONE)?\s*(?:,|$)",
    re.I,
)
COLUMN_TYPES_EXAMPLE = "ts TIMESTAMP(3), created TIMESTAMP_LTZ(3), payload.at TIMESTAMP(3)"


@dataclass(frozen=True)
class FlinkColumnTypes(Kind[dict[ColumnPath, FlinkTimestamp]]):
    """`ts TIMESTAMP(3), r.at TIMESTAMP_LTZ(3)`: the Flink timestamp type of each listed column (a dotted path for a
    STRUCT's field), where Spark's type (microseconds: precision 6) carries less; blank: none."""

    type_name: str = "columns with Flink types (`ts TIMESTAMP(3), ...`)"

    def parse(self, raw: str) -> dict[ColumnPath, FlinkTimestamp]:
        types: dict[ColumnPath, FlinkTimestamp] = {}
        position, text = 0, raw.strip()
        while position < len(text):
            match = _COLUMN_TYPE.match(text, position)
            if match is None:
                raise Invalid(f": cannot read '{text[position:].strip()}'; expected the form '{COLUMN_TYPES_EXAMPLE}'")
            names = re.findall(_NAME, match.group("path"))
            path = tuple(n[1:-1].replace("``", "`") if n.startswith("`") else n for n in names)
            precision = int(match.group("p") or 6)  # Flink's TIMESTAMP is TIMESTAMP(6)
            if precision > 6:
                raise Invalid(
                    f": {match.group('type').upper()}({precision}) of '{'.'.join(path)}' is finer than Spark's "
                    "timestamps, which hold microseconds: the precision is 0 to 6"
                )
            if path in types:
                raise Invalid(f"names '{'.'.join(path)}' twice")
            zoned = match.group("type").upper() == "TIMESTAMP_LTZ" or match.group("local") is not None
            types[path] = FlinkTimestamp(zoned, precision)
            position = match.end()
        return types
