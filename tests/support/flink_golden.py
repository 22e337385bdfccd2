"""The typed canonical JSON form of the Flink golden corpus (tests/formats/golden/flink/), one function for both sides.

`canonical(value, flink_type_text)` turns a Python value of a Flink SQL type into the form the golden files hold in
"changes" and "table"; a test passes Spark's values through the same function and compares. Pure Python: it imports
no pyspark (integration/flink/golden_job.py runs it inside PyFlink's own venv).

| Flink type | canonical form (Python values accepted) |
|---|---|
| any, NULL | null (None) |
| BOOLEAN | true / false (bool) |
| TINYINT, SMALLINT, INT, BIGINT | JSON number (int) |
| FLOAT | `repr` of the float32 value widened to a Python float, as a string: "1.5", "3.4028234663852886e+38",
  "nan", "inf", "-inf", "-0.0" (float, int) |
| DOUBLE | `repr` of the Python float, as a string, same specials (float, int) |
| DECIMAL(p, s) | plain string with exactly s fraction digits, no exponent, no "-0": "-12.30", "0.000" (Decimal,
  int, str; more digits are rounded half up) |
| CHAR, VARCHAR, STRING | string (str) |
| BINARY, VARBINARY, BYTES | lower-case hex string, "" for empty (bytes, bytearray, memoryview) |
| DATE | "YYYY-MM-DD", year zero-padded: "0001-01-01" (datetime.date) |
| TIME(p) | "HH:MM:SS", plus ".ffffff" (6 digits) when the microseconds are not 0 (datetime.time) |
| TIMESTAMP(p) (no zone) | wall clock "YYYY-MM-DDTHH:MM:SS.ffffff", always 6 fraction digits (naive datetime) |
| TIMESTAMP_LTZ(p) | the instant as epoch microseconds, an integer (aware datetime in any zone; a naive datetime
  is read as a UTC wall clock; an int is taken as epoch microseconds) |
| ARRAY<T> | list of canonical elements (list, tuple) |
| MAP<K, V> | list of [key, value] pairs sorted by canonical key, null key first (dict, or pairs) |
| ROW<f T, ...> | object {field: value} in the row's field order (dict by name; a Row with asDict/as_dict;
  tuple/list by position) |

Nanoseconds beyond microseconds are not representable: Flink's TIMESTAMP(9) is out of the corpus. A naive datetime
for TIMESTAMP_LTZ is taken as UTC: run Spark with spark.sql.session.timeZone=UTC and the Python process with TZ=UTC
(or pass aware datetimes) when comparing Spark's values.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import re
import struct
from dataclasses import dataclass
from typing import Any

__all__ = ["FlinkType", "canonical", "parse_type"]

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_MICRO = dt.timedelta(microseconds=1)


@dataclass(frozen=True)
class FlinkType:
    """A parsed Flink SQL type: `root` is the upper-case name (INT, DECIMAL, TIMESTAMP_LTZ, ROW, ...)."""

    root: str
    nullable: bool = True
    precision: int | None = None
    scale: int | None = None
    fields: tuple[tuple[str, FlinkType], ...] = ()  # ROW
    element: FlinkType | None = None  # ARRAY
    key: FlinkType | None = None  # MAP
    value: FlinkType | None = None  # MAP


_ALIASES = {
    "INTEGER": "INT",
    "DEC": "DECIMAL",
    "NUMERIC": "DECIMAL",
    "STRING": "VARCHAR",
    "BYTES": "VARBINARY",
    "TIMESTAMP_WITH_LOCAL_TIME_ZONE": "TIMESTAMP_LTZ",
}
_TOKEN = re.compile(r"\s*(`(?:[^`]|``)*`|\w+|[<>(),])")


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[str] = []
        pos = 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None:
                if text[pos:].strip() == "":
                    break
                raise ValueError(f"cannot parse Flink type {text!r} at {text[pos:]!r}")
            self.tokens.append(m.group(1))
            pos = m.end()
        self.i = 0

    def peek(self, ahead: int = 0) -> str | None:
        j = self.i + ahead
        return self.tokens[j] if j < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (expected is not None and tok.upper() != expected):
            raise ValueError(f"cannot parse Flink type {self.text!r}: expected {expected or 'more'}, got {tok!r}")
        self.i += 1
        return tok

    def word(self, *words: str) -> bool:
        """Consume the upper-cased `words` if they come next."""
        for k, w in enumerate(words):
            tok = self.peek(k)
            if tok is None or tok.upper() != w:
                return False
        self.i += len(words)
        return True

    def params(self) -> list[int]:
        out: list[int] = []
        if self.peek() == "(":
            self.take("(")
            out.append(int(self.take()))
            while self.peek() == ",":
                self.take(",")
                out.append(int(self.take()))
            self.take(")")
        return out

    def parse(self) -> FlinkType:
        name = self.take().upper()
        name = _ALIASES.get(name, name)
        if name == "DOUBLE":
            self.word("PRECISION")
        precision = scale = None
        fields: tuple[tuple[str, FlinkType], ...] = ()
        element = key = value = None
        if name in ("ARRAY", "MULTISET"):
            self.take("<")
            element = self.parse()
            self.take(">")
        elif name == "MAP":
            self.take("<")
            key = self.parse()
            self.take(",")
            value = self.parse()
            self.take(">")
        elif name == "ROW":
            self.take("<" if self.peek() == "<" else "(")
            items = []
            while self.peek() not in (">", ")"):
                field = self.take()
                if field.startswith("`"):
                    field = field[1:-1].replace("``", "`")
                items.append((field, self.parse()))
                if self.peek() == ",":
                    self.take(",")
            self.take()
            fields = tuple(items)
        else:
            p = self.params()
            if name == "DECIMAL":
                precision, scale = (p + [10, 0][len(p) :])[:2] if p else (10, 0)
            elif p:
                precision = p[0]
            if name == "TIMESTAMP":
                if self.word("WITH", "LOCAL", "TIME", "ZONE"):
                    name = "TIMESTAMP_LTZ"
                else:
                    self.word("WITHOUT", "TIME", "ZONE")
            if name in ("TIMESTAMP", "TIMESTAMP_LTZ") and precision is None:
                precision = 6
            if name == "TIME" and precision is None:
                precision = 0
        nullable = True
        if self.word("NOT", "NULL"):
            nullable = False
        else:
            self.word("NULL")
        return FlinkType(name, nullable, precision, scale, fields, element, key, value)


def parse_type(text: str) -> FlinkType:
    """Parse a Flink SQL type text: `INT NOT NULL`, `DECIMAL(10, 2)`, `TIMESTAMP_LTZ(3)`, `ROW<a INT, b STRING>`,
    `MAP<STRING, INT>`, `ARRAY<INT NOT NULL>`, also as Flink prints them (`TIMESTAMP(3) WITH LOCAL TIME ZONE`)."""
    parser = _Parser(text)
    t = parser.parse()
    if parser.peek() is not None:
        raise ValueError(f"cannot parse Flink type {text!r}: unexpected {parser.peek()!r}")
    return t


def _float_text(x: float) -> str:
    return repr(float(x))  # 'nan', 'inf', '-inf', '-0.0' included


def _decimal_text(value: Any, scale: int) -> str:
    with decimal.localcontext() as ctx:
        ctx.prec = 200
        d = value if isinstance(value, decimal.Decimal) else decimal.Decimal(str(value))
        if not d.is_finite():
            raise ValueError(f"DECIMAL cannot hold {value!r}")
        q = d.quantize(decimal.Decimal(1).scaleb(-scale), rounding=decimal.ROUND_HALF_UP)
        if q == 0:
            q = abs(q)
        return format(q, "f")


def _epoch_micros(value: Any) -> int:
    if isinstance(value, bool):
        raise TypeError("a bool is no TIMESTAMP_LTZ value")
    if isinstance(value, int):
        return value
    if isinstance(value, dt.datetime):
        aware = value if value.tzinfo is not None else value.replace(tzinfo=dt.timezone.utc)
        return (aware - _EPOCH) // _MICRO
    raise TypeError(f"TIMESTAMP_LTZ takes a datetime or epoch microseconds, not {type(value).__name__}")


def _row_items(value: Any, t: FlinkType) -> list[Any]:
    names = [name for name, _ in t.fields]
    if isinstance(value, dict):
        return [value.get(name) for name in names]
    for as_dict in ("asDict", "as_dict"):  # Spark's Row, PyFlink's Row (both are tuples too)
        if hasattr(value, as_dict):
            try:
                d = getattr(value, as_dict)()
            except Exception:  # a Row without field names: positional
                break
            return [d.get(name) for name in names]
    items = list(value)
    if len(items) != len(names):
        raise ValueError(f"a ROW of {len(names)} fields got {len(items)} values")
    return items


def _canonical(value: Any, t: FlinkType) -> Any:
    if value is None:
        return None
    root = t.root
    if root == "BOOLEAN":
        return bool(value)
    if root in ("TINYINT", "SMALLINT", "INT", "BIGINT"):
        return int(value)
    if root == "FLOAT":
        return _float_text(struct.unpack("<f", struct.pack("<f", float(value)))[0])
    if root == "DOUBLE":
        return _float_text(value)
    if root == "DECIMAL":
        return _decimal_text(value, t.scale or 0)
    if root in ("CHAR", "VARCHAR"):
        return str(value)
    if root in ("BINARY", "VARBINARY"):
        return bytes(value).hex()
    if root == "DATE":
        if isinstance(value, dt.datetime) or not isinstance(value, dt.date):
            raise TypeError(f"DATE takes a datetime.date, not {type(value).__name__}")
        return f"{value.year:04d}-{value.month:02d}-{value.day:02d}"
    if root == "TIME":
        if not isinstance(value, dt.time):
            raise TypeError(f"TIME takes a datetime.time, not {type(value).__name__}")
        text = f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}"
        return text + (f".{value.microsecond:06d}" if value.microsecond else "")
    if root == "TIMESTAMP":
        if not isinstance(value, dt.datetime) or value.tzinfo is not None:
            raise TypeError(f"TIMESTAMP (no zone) takes a naive datetime, not {value!r}")
        return f"{value.year:04d}-{value:%m-%dT%H:%M:%S}.{value.microsecond:06d}"
    if root == "TIMESTAMP_LTZ":
        return _epoch_micros(value)
    if root in ("ARRAY", "MULTISET"):
        assert t.element is not None
        return [_canonical(v, t.element) for v in value]
    if root == "MAP":
        assert t.key is not None and t.value is not None
        pairs = value.items() if hasattr(value, "items") else value
        out = [[_canonical(k, t.key), _canonical(v, t.value)] for k, v in pairs]
        return sorted(out, key=lambda kv: (kv[0] is not None, _sort_key(kv[0])))
    if root == "ROW":
        items = _row_items(value, t)
        return {name: _canonical(v, ft) for (name, ft), v in zip(t.fields, items)}
    raise ValueError(f"no canonical form for Flink type {root}")


def _sort_key(v: Any) -> Any:
    """Keys of one map share a type: strings sort by code point, numbers by value, others by their JSON text."""
    if v is None or isinstance(v, (str, int, float)):
        return v if v is not None else 0
    return json.dumps(v, sort_keys=True)


def canonical(value: Any, flink_type_text: str | FlinkType) -> Any:
    """The canonical JSON form of `value` as a value of the Flink type `flink_type_text` (see the module's table)."""
    t = parse_type(flink_type_text) if isinstance(flink_type_text, str) else flink_type_text
    return _canonical(value, t)
