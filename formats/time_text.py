"""Spark's TIME (Arrow time64[ns], pyspark 4.1+) <-> the text Flink 2.2.1's json and csv formats write, column-wise.

Flink's runtime holds a TIME as milliseconds of the day, and Flink 2.2.1 resolves every TIME(p) of a CREATE TABLE
as TIME(0). What its formats do with it (flink-json / flink-csv 2.2.1, read from their classes and checked on Flink's
own records, tests/formats/golden/flink/time_*.json):

- json (and the JSON change envelopes) writes `HH:mm:ss`, whole seconds, the milliseconds dropped; it reads
  `HH:mm:ss` with 0 to 9 fraction digits and drops the fraction.
- csv writes `HH:mm:ss` and the fraction without trailing zeros (Java's ISO_LOCAL_TIME: `12:34:56.78`); it reads
  ISO_LOCAL_TIME (`HH:mm`, the seconds and the fraction optional) truncated to the resolved TIME(0): whole seconds.

Here a value reads as its text says, to microseconds (Spark's finest TIME); finer non-zero digits are a record error,
never dropped. The json format writes a TIME with a fraction nowhere: Flink would write, and read, it as the whole
second, so such a value fails the write (`fraction_refusal`).
"""

from __future__ import annotations

import datetime as dt
import re

import pyarrow as pa
import pyarrow.compute as pc

from .codec import first_nested

NANOS = pa.time64("ns")
_PER_SECOND = 1_000_000_000
# Flink's json: TimeFormats.SQL_TIME_FORMAT, `HH:mm:ss` then an optional fraction of 0 to 9 digits.
JSON_TIME = r"^([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,9})?$"
# Flink's csv: LocalTime.parse, Java's ISO_LOCAL_TIME: the seconds optional, the fraction only after them.
CSV_TIME = r"^([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9](\.[0-9]{1,9})?)?$"


def times_from_text(text: pa.Array, pattern: str) -> pa.Array:
    """A string column of times as time64[ns]; ValueError naming the first value that is not one (or holds digits
    finer than a microsecond)."""
    ok = pc.match_substring_regex(text, pattern)
    if not pc.all(pc.or_(ok, pc.is_null(text)), min_count=0).as_py():
        bad = text[pc.index(ok, False).as_py()].as_py()
        raise ValueError(f"'{_show(bad)}' is not a time ({_form(pattern)})")
    has_seconds = pc.greater_equal(pc.utf8_length(text), 8)

    def number(start: int, stop: int, missing: str = "") -> pa.Array:
        digits = pc.utf8_slice_codeunits(text, start, stop)
        return pc.cast(pc.if_else(has_seconds, digits, missing) if missing else digits, pa.int64())

    seconds = pc.add(pc.multiply(pc.add(pc.multiply(number(0, 2), 60), number(3, 5)), 60), number(6, 8, "0"))
    fraction = pc.utf8_rpad(pc.utf8_slice_codeunits(text, 9, 18), 9, "0")
    nanos = pc.cast(fraction, pa.int64())
    finer = pc.not_equal(pc.subtract(nanos, pc.multiply(pc.divide(nanos, 1000), 1000)), 0)
    if pc.any(finer).as_py():
        bad = text[pc.index(finer, True).as_py()].as_py()
        raise ValueError(f"'{bad}' has digits finer than a microsecond, which Spark's TIME cannot hold")
    return pc.cast(pc.add(pc.multiply(seconds, _PER_SECOND), nanos), NANOS)


def parse_time(text: object, pattern: str) -> dt.time:
    """One value as times_from_text reads it (the per-record paths)."""
    if not isinstance(text, str) or not re.match(pattern, text):
        raise ValueError(f"'{_show(text)}' is not a time ({_form(pattern)})")
    nanos = times_from_text(pa.array([text]), pattern)[0]
    value: dt.time = nanos.as_py()
    return value


def time_texts(column: pa.Array, fraction: bool) -> pa.Array:
    """`HH:mm:ss`, plus (`fraction`) the fraction without trailing zeros as Java's ISO_LOCAL_TIME writes it, for every
    value of a time column (nulls stay null)."""
    nanos = pc.cast(column, pa.int64())
    seconds = pc.divide(nanos, _PER_SECOND)
    minutes = pc.divide(seconds, 60)
    hours = pc.divide(minutes, 60)

    def two(values: pa.Array) -> pa.Array:
        return pc.utf8_lpad(pc.cast(values, pa.string()), 2, "0")

    text = pc.binary_join_element_wise(
        two(hours), two(pc.subtract(minutes, pc.multiply(hours, 60))),
        two(pc.subtract(seconds, pc.multiply(minutes, 60))), ":",
    )  # fmt: skip
    if not fraction:
        return text
    rest = pc.subtract(nanos, pc.multiply(seconds, _PER_SECOND))
    digits = pc.utf8_rtrim(pc.utf8_lpad(pc.cast(rest, pa.string()), 9, "0"), "0")
    return pc.if_else(pc.equal(rest, 0), text, pc.binary_join_element_wise(text, digits, "."))


def with_fraction(array: pa.Array) -> str | None:
    """The first TIME in `array` (at any depth) with a fraction of a second, as `12:34:56.789`; None when none."""
    return first_nested(array, pa.types.is_time, _with_fraction)


def _with_fraction(array: pa.Array) -> str | None:
    nanos = pc.cast(array, pa.int64())
    rest = pc.not_equal(pc.subtract(nanos, pc.multiply(pc.divide(nanos, _PER_SECOND), _PER_SECOND)), 0)
    if not pc.any(rest).as_py():
        return None
    found: str = time_texts(array.filter(rest).slice(0, 1), fraction=True)[0].as_py()
    return found


def fraction_refusal(name: str, found: str, fmt: str) -> ValueError:
    """The write error for a TIME with a fraction of a second in a format that writes whole seconds (json)."""
    return ValueError(
        f"column '{name}': the TIME {found} has a fraction of a second, which Flink's {fmt} format writes as "
        f"{found.split('.')[0]} (it writes and reads a TIME as whole seconds), so the fraction would be lost: "
        "truncate the column to seconds first (CAST(column AS TIME(0))), or use a format that keeps it (csv, avro)"
    )


def _form(pattern: str) -> str:
    return "HH:mm:ss[.fffffffff]" if pattern == JSON_TIME else "HH:mm[:ss[.fffffffff]]"


def _show(value: object, limit: int = 40) -> str:
    text = str(value)
    return text if len(text) <= limit else text[:limit] + "..."
