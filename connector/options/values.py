"""Option values by kind, one parser each (durations, sizes, flags, counts): checked, typed, and the catalog's
default when not given."""

from __future__ import annotations

import re
from collections.abc import Mapping

from ..errors import OptionError
from .catalog import default_of


def require(options: Mapping[str, str], name: str, example: str) -> str:
    value = options.get(name, "").strip()
    if not value:
        raise OptionError(f'option \'{name}\' is required, e.g. .option("{name}", "{example}")')
    return value


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


def given_or_default(options: Mapping[str, str], name: str) -> str:
    raw = options.get(name)
    return default_of(name) if raw is None else raw


def parse_duration(options: Mapping[str, str], name: str, allow_zero: bool = False) -> float:
    """A Flink-style duration ('30 s', '500 ms', '2 min'; a bare number is milliseconds), in seconds; the
    catalog's default when not given."""
    raw = given_or_default(options, name)
    match = _DURATION.match(raw.lower())
    if not match or (match.group(2) and match.group(2) not in _UNIT_SECONDS):
        raise OptionError(f"option '{name}' must be a duration such as '30 s', '500 ms' or '2 min', got '{raw}'")
    seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2) or "ms"]
    if seconds < 0 or (seconds == 0 and not allow_zero):
        raise OptionError(f"option '{name}' must be {'zero or ' if allow_zero else ''}positive, got '{raw}'")
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


def parse_memory_size(options: Mapping[str, str], name: str) -> int:
    """A Flink-style memory size ('256 mb', '1 gb', '64m', '512 kb'; a bare number is bytes), in bytes; the
    catalog's default when not given."""
    raw = given_or_default(options, name)
    match = _SIZE.match(raw.lower())
    if not match or (match.group(2) and match.group(2) not in _UNIT_BYTES) or int(match.group(1)) < 1:
        raise OptionError(
            f"option '{name}' must be a positive memory size such as '256 mb', '1 gb' or '64m', got '{raw}'"
        )
    return int(match.group(1)) * _UNIT_BYTES[match.group(2) or "b"]


def parse_table_memory_budget(options: Mapping[str, str]) -> int:
    """scan.table.memory-budget in bytes: what a task's latest-record-per-key reduction may hold (read/table.py)."""
    return parse_memory_size(options, "scan.table.memory-budget")


def parse_flag(options: Mapping[str, str], name: str) -> bool:
    """true or false; the catalog's default when not given."""
    raw = given_or_default(options, name)
    if raw.strip().lower() not in ("true", "false"):
        raise OptionError(f"option '{name}' must be true or false, got '{raw}'")
    return raw.strip().lower() == "true"


def parse_positive_int(options: Mapping[str, str], name: str) -> int | None:
    raw = options.get(name)
    if raw is None:
        return None
    if not raw.strip().isdigit() or int(raw) < 1:
        raise OptionError(f"option '{name}' must be a positive whole number, got '{raw}'")
    return int(raw)


def parse_count(options: Mapping[str, str], name: str) -> int:
    """A whole number, zero or more; the catalog's default when not given."""
    raw = given_or_default(options, name)
    if not raw.strip().isdigit():
        raise OptionError(f"option '{name}' must be a whole number (0 or more), got '{raw}'")
    return int(raw)
