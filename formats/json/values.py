"""JSON values <-> Arrow values, one type at a time: the per-record paths of the json format (and of nested
values in csv fields), written as Flink's json format writes them."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable
from datetime import date, datetime, time, timezone
from decimal import Decimal, InvalidOperation
from functools import partial
from typing import Any, Protocol, TypeVar

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from ...kernel.errors import FormatOptionError
from ..codec import columns_to_batch, first_nested, nested_type_has
from ..decimals import fit_decimal
from ..java_numbers import decimal_text, float_texts
from ..time_text import JSON_TIME, parse_time

# What can go wrong converting one record (json.loads recurses on nesting: RecursionError).
RECORD_ERRORS = (ValueError, TypeError, OverflowError, ArithmeticError, RecursionError, orjson.JSONDecodeError)

Convert = Callable[[Any], Any]


class JsonWriting(Protocol):
    """How values are written as JSON: the json format's options, which its codec holds (no import of it here:
    the codec builds on this module)."""

    decimal_plain: bool  # encode.decimal-as-plain-number
    iso8601: bool  # timestamp-format.standard ISO-8601 (else SQL)
    map_null_key_mode: str  # FAIL, DROP or LITERAL
    map_null_key_literal: str


_INT_RANGES = {
    pa.int8(): (-(2**7), 2**7 - 1),
    pa.int16(): (-(2**15), 2**15 - 1),
    pa.int32(): (-(2**31), 2**31 - 1),
    pa.int64(): (-(2**63), 2**63 - 1),
}


def json_bytes(value: Any) -> bytes:
    """orjson.dumps, copied to its own size. Since orjson 3.12 the bytes it returns keep its whole output buffer,
    about 4 KB even for a short value: a batch held as such outputs takes 4 KB a row, and the page faults make
    it slower to build than copying each at once (the json encoder's row path, 10,000 nested rows: 32-42 MB
    and 3.0-3.9 us a row before, 3 MB and 1.5 us a row copied)."""
    return bytes(memoryview(orjson.dumps(value)))


def json_reason(e: BaseException) -> str:
    if isinstance(e, RecursionError):
        return "the JSON is nested too deeply"
    if isinstance(e, InvalidOperation):
        return "not a decimal number"
    return str(e) or type(e).__name__


def rows_to_batch(rows: list[list[Any]], schema: pa.Schema) -> tuple[pa.RecordBatch, list[tuple[int, str]]]:
    """Rows of converted values as a batch (codec.columns_to_batch): rows with a value that does not fit its column
    after all are left out, (index into `rows`, reason)."""
    return columns_to_batch([list(column) for column in zip(*rows)], schema, len(rows))


def json_to_arrow(t: pa.DataType) -> Convert:
    """A function from a decoded JSON value (not None) to the Python value pa.array takes for `t`."""
    if pa.types.is_boolean(t):
        return _expect(bool)
    if pa.types.is_integer(t):
        low, high = _INT_RANGES[t] if t in _INT_RANGES else (0, 2**64 - 1)

        def to_int(v: Any) -> int:
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"expected an integer, got {_show(v)}")
            if not low <= v <= high:
                raise ValueError(f"{v} is out of range for {t}")
            return v

        return to_int
    if pa.types.is_floating(t):
        return _to_float
    if pa.types.is_decimal(t):
        return partial(_to_decimal, t=t)
    if pa.types.is_string(t):
        # Like Flink: a non-string JSON value read into a STRING column keeps its JSON text.
        return lambda v: v if isinstance(v, str) else orjson.dumps(v, default=_exact_number).decode()
    if pa.types.is_binary(t):
        return lambda v: base64.b64decode(_expect(str)(v), validate=True)
    if pa.types.is_date(t):
        return _parse_date
    if pa.types.is_timestamp(t):
        return _parse_timestamp_ltz if t.tz else _parse_timestamp_ntz
    if pa.types.is_time(t):
        return lambda v: parse_time(_expect(str)(v), JSON_TIME)
    if pa.types.is_list(t):
        item = json_to_arrow(t.value_type)
        return lambda v: [None if x is None else item(x) for x in _expect(list)(v)]
    if pa.types.is_map(t):
        key, item = json_to_arrow(t.key_type), json_to_arrow(t.item_type)
        return lambda v: [(key(k), None if x is None else item(x)) for k, x in _expect(dict)(v).items()]
    if pa.types.is_struct(t):
        fields = [(f.name, json_to_arrow(f.type)) for f in t]

        def to_struct(v: Any) -> dict[str, Any]:
            obj = _expect(dict)(v)
            return {n: None if obj.get(n) is None else c(obj[n]) for n, c in fields}

        return to_struct
    raise FormatOptionError(f"the json format does not support type {t}")


def json_loads_for(t: pa.DataType) -> Callable[[bytes | str], Any]:
    """orjson, or the standard library with exact decimals when `t` holds a decimal wider than a double
    keeps (orjson reads every JSON number with a fraction as a float)."""
    return _exact_loads if nested_type_has(t, _wide_decimal) else orjson.loads


_exact_loads = partial(json.loads, parse_float=Decimal)


def _wide_decimal(t: pa.DataType) -> bool:
    wide: bool = pa.types.is_decimal(t) and t.precision > 15
    return wide


def is_datetime(t: pa.DataType) -> bool:
    datetime_type: bool = pa.types.is_date32(t) or pa.types.is_timestamp(t)
    return datetime_type


def _exact_number(v: Any) -> Any:
    if isinstance(v, Decimal):
        return orjson.Fragment(str(v))
    raise TypeError(f"{type(v).__name__} is not JSON")


def _expect(kind: type) -> Convert:
    def check(v: Any) -> Any:
        if not isinstance(v, kind) or (kind is not bool and isinstance(v, bool)):
            raise TypeError(f"expected {kind.__name__}, got {_show(v)}")
        return v

    return check


def _show(v: Any) -> str:
    text = orjson.dumps(v, default=_exact_number).decode()
    return text if len(text) <= 40 else text[:37] + "..."


def _to_float(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, str, Decimal)):
        raise TypeError(f"expected a number, got {_show(v)}")
    return float(v)  # also "NaN" / "Infinity", as Flink writes them


def _to_decimal(v: Any, t: pa.Decimal128Type) -> Decimal:
    """The value at the column's scale, rounded half-up (decimals.fit_decimal); more integer digits than the
    column has is the record's error."""
    if isinstance(v, bool) or not isinstance(v, (int, float, str, Decimal)):
        raise TypeError(f"expected a decimal number, got {_show(v)}")
    return fit_decimal(Decimal(str(v)), t, lambda: _show(v))


# Seconds, then a fraction of more than 6 digits that are not all zeros past the sixth.
NANOS = re.compile(r":[0-5]\d[.,]\d{6}0*[1-9]")
_SIGNED_OR_LONG_YEAR = re.compile(r"[+-]|\d{5}")
_D = TypeVar("_D", bound=date)


def _iso_datetime(text: str, parse: Callable[[str], _D]) -> _D:
    """fromisoformat, which drops fraction digits past microseconds without a word, made exact: such a
    value is the record's error, as is a year outside 0001 to 9999 (Python's datetime)."""
    if NANOS.search(text):
        raise ValueError(
            f"{text!r} has more fraction digits than microseconds, all a Spark TIMESTAMP holds, and the json format "
            "drops no digit: declare the column STRING to keep the text (Spark's to_timestamp or CAST then keeps "
            "the first 6 digits)"
        )
    try:
        return parse(text)
    except ValueError:
        if _SIGNED_OR_LONG_YEAR.match(text):
            raise ValueError(f"{text!r} has a year outside 0001 to 9999, which the json format reads") from None
        raise


def _parse_date(v: Any) -> date:
    return _iso_datetime(_expect(str)(v), date.fromisoformat)


def _parse_timestamp_ntz(v: Any) -> datetime:
    text = _expect(str)(v)
    if text.endswith(("Z", "z")):
        text = text[:-1]
    parsed = _iso_datetime(text, datetime.fromisoformat)
    return (
        parsed.replace(tzinfo=None) if parsed.tzinfo is None else parsed.astimezone(timezone.utc).replace(tzinfo=None)
    )


def _parse_timestamp_ltz(v: Any) -> datetime:
    text = _expect(str)(v)
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    parsed = _iso_datetime(text, datetime.fromisoformat)
    return parsed.replace(tzinfo=timezone.utc) if parsed.tzinfo is None else parsed


# The dates and timestamps Python's datetime holds, which the json and csv formats read and write with: the
# years 0001 to 9999 (Spark's documented range; Spark itself holds dates to the year 5881580).
_FIRST_DAY, _LAST_DAY = -719162, 2932896  # 0001-01-01 and 9999-12-31, in days from 1970-01-01
_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def datetime_out_of_range(array: pa.Array) -> str | None:
    """The first DATE / TIMESTAMP in `array` (at any depth, within its slice) outside the years 0001 to 9999,
    as Spark prints it ('DATE +10000-01-01'); None when all are inside."""
    return first_nested(array, is_datetime, _datetime_out_of_range)


def _datetime_out_of_range(array: pa.Array) -> str | None:
    t = array.type
    per_second = 0 if pa.types.is_date32(t) else _PER_SECOND[t.unit]
    per_day = per_second * 86_400 or 1
    raw = pc.cast(array, pa.int32() if pa.types.is_date32(t) else pa.int64())
    low, high = pc.min_max(raw).values()
    if not low.is_valid or (low.as_py() >= _FIRST_DAY * per_day and high.as_py() < (_LAST_DAY + 1) * per_day):
        return None
    outside = pc.or_(pc.less(raw, _FIRST_DAY * per_day), pc.greater_equal(raw, (_LAST_DAY + 1) * per_day))
    value = raw[pc.index(outside, True).as_py()].as_py()
    if pa.types.is_date32(t):
        return f"DATE {_spark_date(value)}"
    days, within = divmod(value, per_day)
    return f"TIMESTAMP {_spark_date(days)} {_spark_time(within * 1_000_000 // per_second)}"


def _spark_date(days: int) -> str:
    """A day as Spark (Java's ISO_LOCAL_DATE) prints it, for any year: `+10000-01-01`, `-0001-12-31`."""
    # Days to the proleptic Gregorian calendar (H. Hinnant's civil_from_days), exact for any integer.
    z = days + 719468
    era, doe = divmod(z, 146097)
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day, month = doy - (153 * mp + 2) // 5 + 1, mp + 3 if mp < 10 else mp - 9
    year = yoe + era * 400 + (month <= 2)
    sign = "+" if year > 9999 else "-" if year < 0 else ""
    return f"{sign}{abs(year):04d}-{month:02d}-{day:02d}"


def _spark_time(micros: int) -> str:
    seconds, fraction = divmod(micros, 1_000_000)
    text = f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
    return text + f".{fraction:06d}".rstrip("0") if fraction else text


def outside_datetime_range(name: str, found: str, fmt: str) -> ValueError:
    """The write error for a value datetime_out_of_range found in column `name`."""
    return ValueError(
        f"column '{name}': the {found} is outside the years 0001 to 9999 that the {fmt} format writes and reads "
        "(Spark's documented range); filter such rows out or correct the value before writing"
    )


def json_values(column: pa.Array, convert: Convert | None) -> list[Any]:
    """The column's values as orjson takes them (`convert`: from arrow_to_json). Floats, at any depth, are
    turned into Java's text for the whole column at once first (formats/java_numbers.py)."""
    values = _floats_as_text(column).to_pylist()
    return values if convert is None else [None if v is None else convert(v) for v in values]


def _floats_as_text(array: pa.Array, quote: bool = True) -> pa.Array:
    """`array` with every float (also inside lists, maps and structs) replaced by its JSON text."""
    t = array.type
    if pa.types.is_floating(t):
        return float_texts(array, quote_non_finite=quote)
    if not nested_type_has(t, pa.types.is_floating):
        return array
    mask = array.is_null()
    if pa.types.is_list(t):  # offsets and values both unsliced: they stay aligned
        return pa.ListArray.from_arrays(array.offsets, _floats_as_text(array.values), mask=mask)
    if pa.types.is_map(t):  # a float map key is text in the object, not a JSON string: unquoted
        keys, items = _floats_as_text(array.keys, quote=False), _floats_as_text(array.items)
        return pa.MapArray.from_arrays(array.offsets, keys, items, mask=mask)
    fields = [_floats_as_text(child) for child in array.flatten()]  # struct: children sliced like it
    return pa.StructArray.from_arrays(fields, names=[f.name for f in t], mask=mask)


def arrow_to_json(t: pa.DataType, codec: JsonWriting) -> Convert | None:
    """A function from a Python value of Arrow type `t` to what orjson writes; None when as-is. The values
    come from json_values: a float is already its JSON text. Numbers are written as Flink's json format
    (Jackson) writes them."""
    if pa.types.is_decimal(t):
        plain = codec.decimal_plain
        return lambda d: orjson.Fragment(decimal_text(d, plain))
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return lambda b: base64.b64encode(b).decode()
    if pa.types.is_floating(t):
        return orjson.Fragment
    if pa.types.is_timestamp(t):
        sep, zone = ("T" if codec.iso8601 else " "), ("Z" if t.tz else "")
        return lambda ts: _format_timestamp(ts, sep, zone)
    if pa.types.is_time(t):  # whole seconds in the json format (its encoder refuses a fraction), as Flink writes them
        return _format_time
    if pa.types.is_list(t):
        element = arrow_to_json(t.value_type, codec)
        return None if element is None else (lambda xs: [None if x is None else element(x) for x in xs])
    if pa.types.is_map(t):
        key = None if pa.types.is_floating(t.key_type) else arrow_to_json(t.key_type, codec)
        item = arrow_to_json(t.item_type, codec)
        return lambda pairs: _map_to_json(pairs, key, item, codec)
    if pa.types.is_struct(t):
        fields = [(f.name, arrow_to_json(f.type, codec)) for f in t]
        if all(c is None for _, c in fields):
            return None
        return lambda d: {n: (d[n] if c is None or d[n] is None else c(d[n])) for n, c in fields}
    return None


def _format_time(t: time) -> str:
    return t.isoformat("microseconds").rstrip("0").rstrip(".") if t.microsecond else t.isoformat("seconds")


def _format_timestamp(ts: datetime, sep: str, zone: str) -> str:
    if ts.tzinfo is not None:
        ts = ts.astimezone(timezone.utc).replace(tzinfo=None)
    # isoformat zero-pads every field (strftime's %Y does not, for years below 1000).
    if not ts.microsecond:
        return ts.isoformat(sep, "seconds") + zone
    return ts.isoformat(sep, "microseconds").rstrip("0") + zone


def _map_to_json(
    pairs: list[tuple[Any, Any]], key: Convert | None, item: Convert | None, codec: JsonWriting
) -> dict[str, object]:
    out: dict[str, object] = {}
    for k, v in pairs:
        if k is None:
            if codec.map_null_key_mode == "DROP":
                continue
            if codec.map_null_key_mode == "FAIL":
                raise ValueError("a map has a null key; set 'json.map-null-key.mode' to DROP or LITERAL to write it")
            k = codec.map_null_key_literal
        elif key is not None:
            k = key(k)
        out[k if isinstance(k, str) else orjson.dumps(k).decode()] = v if item is None or v is None else item(v)
    return out
