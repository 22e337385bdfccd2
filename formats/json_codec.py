"""JSON (orjson / Arrow's JSON reader), readable and writable by Flink's `json` format.

Decoding takes the fast path first: the batch's payloads joined by newlines go through
`pyarrow.json.read_json` with an explicit schema (several times faster than per-record Python). Any
surprise there (a payload with a newline, a type Arrow cannot parse, a row count that does not match)
sends the batch down the per-record path, which is lenient where Flink is (numbers into strings)
and names each record that fails.
"""

from __future__ import annotations

import base64
import io
import json
import math
from collections.abc import Callable, Mapping, Sequence
from datetime import date, datetime, timezone
from decimal import Decimal, InvalidOperation
from functools import partial
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from . import json_vector
from .codec import (
    Codec,
    CodecContext,
    Decoded,
    Decoder,
    Encoder,
    FormatOptionError,
    empty_batch,
    option_choice,
    option_flag,
)

Convert = Callable[[Any], Any]

_INT_RANGES = {
    pa.int8(): (-(2**7), 2**7 - 1),
    pa.int16(): (-(2**15), 2**15 - 1),
    pa.int32(): (-(2**31), 2**31 - 1),
    pa.int64(): (-(2**63), 2**63 - 1),
}


class JsonCodec(Codec):
    name = "json"
    option_names = frozenset(
        {
            "fail-on-missing-field",
            "ignore-parse-errors",
            "timestamp-format.standard",
            "map-null-key.mode",
            "map-null-key.literal",
            "encode.decimal-as-plain-number",
            "encode.ignore-null-fields",
        }
    )

    def __init__(self, options: Mapping[str, str], context: CodecContext) -> None:
        super().__init__(options, context)
        prefix = f"{context.role}.json."
        self.fail_on_missing_field = option_flag(options, "fail-on-missing-field", prefix)
        self.ignore_parse_errors = option_flag(options, "ignore-parse-errors", prefix)
        if self.fail_on_missing_field and self.ignore_parse_errors:
            raise FormatOptionError(
                f"options '{prefix}fail-on-missing-field' and '{prefix}ignore-parse-errors' cannot both be true"
            )
        self.iso8601 = (
            option_choice(options, "timestamp-format.standard", prefix, ("SQL", "ISO-8601"), "SQL") == "ISO-8601"
        )
        self.map_null_key_mode = option_choice(
            options, "map-null-key.mode", prefix, ("FAIL", "DROP", "LITERAL"), "FAIL"
        )
        self.map_null_key_literal = options.get("map-null-key.literal", "null")
        self.decimal_plain = option_flag(options, "encode.decimal-as-plain-number", prefix)
        self.ignore_null_fields = option_flag(options, "encode.ignore-null-fields", prefix)

    def decoder(self, schema: pa.Schema) -> Decoder:
        return JsonDecoder(schema, self.fail_on_missing_field)

    def encoder(self, schema: pa.Schema) -> Encoder:
        return JsonEncoder(schema, self)


# ---------------------------------------------------------------------------------------------
# Decoding


def _arrow_readable(t: pa.DataType) -> bool:
    """Types Arrow's JSON reader parses exactly as Flink's json format writes them."""
    if pa.types.is_struct(t):
        return all(_arrow_readable(f.type) for f in t)
    if pa.types.is_list(t):
        return _arrow_readable(t.value_type)
    return (
        pa.types.is_boolean(t)
        or pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_string(t)
        or pa.types.is_decimal(t)
        or pa.types.is_timestamp(t)
    )


class JsonDecoder(Decoder):
    def __init__(self, schema: pa.Schema, fail_on_missing_field: bool) -> None:
        self.schema = schema
        self.fail_on_missing_field = fail_on_missing_field
        self.fast = not fail_on_missing_field and all(_arrow_readable(f.type) for f in schema)
        self._parse_options = pa_json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
        self._converters = [(f.name, json_to_arrow(f.type)) for f in schema]
        self._loads = json_loads_for(pa.struct(list(schema)))

    def decode(self, payloads: Sequence[bytes]) -> Decoded:
        if not payloads:
            return Decoded(empty_batch(self.schema))
        if self.fast:
            batch = self._decode_bulk(payloads)
            if batch is not None:
                return Decoded(batch)
        return self._decode_each(payloads)

    def _decode_bulk(self, payloads: Sequence[bytes]) -> pa.RecordBatch | None:
        joined = b"\n".join(payloads)
        if joined.count(b"\n") != len(payloads) - 1:
            return None  # some payload spans lines: only the per-record path keeps rows aligned
        try:
            table = pa_json.read_json(
                io.BytesIO(joined),
                read_options=pa_json.ReadOptions(block_size=max(1 << 20, len(joined) + 1)),
                parse_options=self._parse_options,
            )
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            return None
        if table.num_rows != len(payloads):
            return None  # an empty payload or two objects in one payload
        return table.combine_chunks().to_batches(max_chunksize=len(payloads))[0]

    def _decode_each(self, payloads: Sequence[bytes]) -> Decoded:
        columns: list[list[Any]] = [[] for _ in self._converters]
        failures: list[tuple[int, str]] = []
        for i, payload in enumerate(payloads):
            try:
                row = self._convert_record(payload)
            except (ValueError, TypeError, OverflowError, InvalidOperation, orjson.JSONDecodeError) as e:
                failures.append((i, str(e) or type(e).__name__))
                continue
            for column, value in zip(columns, row):
                column.append(value)
        arrays = [pa.array(col, type=f.type) for col, f in zip(columns, self.schema)]
        return Decoded(pa.RecordBatch.from_arrays(arrays, schema=self.schema), tuple(failures))

    def _convert_record(self, payload: bytes) -> list[Any]:
        obj = self._loads(payload)
        if not isinstance(obj, dict):
            raise ValueError(f"expected a JSON object, got {type(obj).__name__}")
        row = []
        for name, convert in self._converters:
            value = obj.get(name)
            if value is None:
                if self.fail_on_missing_field and name not in obj:
                    raise ValueError(f"field '{name}' is missing")
                row.append(None)
            else:
                try:
                    row.append(convert(value))
                except (ValueError, TypeError, OverflowError, InvalidOperation) as e:
                    raise ValueError(f"field '{name}': {e}") from None
        return row


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
        return _to_decimal
    if pa.types.is_string(t):
        # Like Flink: a non-string JSON value read into a STRING column keeps its JSON text.
        return lambda v: v if isinstance(v, str) else orjson.dumps(v, default=_exact_number).decode()
    if pa.types.is_binary(t):
        return lambda v: base64.b64decode(_expect(str)(v), validate=True)
    if pa.types.is_date(t):
        return lambda v: date.fromisoformat(_expect(str)(v))
    if pa.types.is_timestamp(t):
        return _parse_timestamp_ltz if t.tz else _parse_timestamp_ntz
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
    return _exact_loads if _has_wide_decimal(t) else orjson.loads


_exact_loads = partial(json.loads, parse_float=Decimal)


def _has_wide_decimal(t: pa.DataType) -> bool:
    if pa.types.is_decimal(t):
        return t.precision > 15
    if pa.types.is_map(t):
        return _has_wide_decimal(t.key_type) or _has_wide_decimal(t.item_type)
    if pa.types.is_list(t):
        return _has_wide_decimal(t.value_type)
    return pa.types.is_struct(t) and any(_has_wide_decimal(f.type) for f in t)


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


def _to_decimal(v: Any) -> Decimal:
    if isinstance(v, bool) or not isinstance(v, (int, float, str, Decimal)):
        raise TypeError(f"expected a decimal number, got {_show(v)}")
    return Decimal(str(v))


def _parse_timestamp_ntz(v: Any) -> datetime:
    text = _expect(str)(v)
    if text.endswith(("Z", "z")):
        text = text[:-1]
    parsed = datetime.fromisoformat(text)
    return (
        parsed.replace(tzinfo=None) if parsed.tzinfo is None else parsed.astimezone(timezone.utc).replace(tzinfo=None)
    )


def _parse_timestamp_ltz(v: Any) -> datetime:
    text = _expect(str)(v)
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    parsed = datetime.fromisoformat(text)
    return parsed.replace(tzinfo=timezone.utc) if parsed.tzinfo is None else parsed


# ---------------------------------------------------------------------------------------------
# Encoding


class JsonEncoder(Encoder):
    def __init__(self, schema: pa.Schema, codec: JsonCodec) -> None:
        self.names = schema.names
        self.codec = codec
        self.converters = [arrow_to_json(f.type, codec) for f in schema]
        # Flat rows of numbers, booleans and strings are written column-wise (formats/json_vector.py).
        self.column_wise = json_vector.supports(schema) and not codec.ignore_null_fields

    def encode(self, batch: pa.RecordBatch) -> list[bytes]:
        if self.column_wise:
            encoded = json_vector.encode_objects(batch)
            if encoded is not None:
                return encoded
        columns = []
        for column, convert in zip(batch.columns, self.converters):
            values = column.to_pylist()
            if convert is _float_to_json and pc.all(pc.is_finite(column), min_count=0).as_py() is not False:
                convert = None  # only NaN and infinities need converting
            if convert is not None:
                values = [None if v is None else convert(v) for v in values]
            columns.append(values)
        names, dumps = self.names, orjson.dumps
        if self.codec.ignore_null_fields:
            return [dumps({n: v for n, v in zip(names, row) if v is not None}) for row in zip(*columns)]
        return [dumps(dict(zip(names, row))) for row in zip(*columns)]


def arrow_to_json(t: pa.DataType, codec: JsonCodec) -> Convert | None:
    """A function from a Python value of Arrow type `t` to what orjson writes; None when as-is."""
    if pa.types.is_decimal(t):
        if codec.decimal_plain:
            return lambda d: orjson.Fragment(format(d, "f"))
        return lambda d: orjson.Fragment(str(d))
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return lambda b: base64.b64encode(b).decode()
    if pa.types.is_floating(t):
        return _float_to_json
    if pa.types.is_timestamp(t):
        sep, zone = ("T" if codec.iso8601 else " "), ("Z" if t.tz else "")
        return lambda ts: _format_timestamp(ts, sep, zone)
    if pa.types.is_list(t):
        item = arrow_to_json(t.value_type, codec)
        return None if item is None else (lambda xs: [None if x is None else item(x) for x in xs])
    if pa.types.is_map(t):
        key, item = arrow_to_json(t.key_type, codec), arrow_to_json(t.item_type, codec)
        return lambda pairs: _map_to_json(pairs, key, item, codec)
    if pa.types.is_struct(t):
        fields = [(f.name, arrow_to_json(f.type, codec)) for f in t]
        if all(c is None for _, c in fields):
            return None
        return lambda d: {n: (d[n] if c is None or d[n] is None else c(d[n])) for n, c in fields}
    return None


def _float_to_json(f: float) -> float | str:
    """JSON has no NaN or infinity: write them as strings, as Flink's json format (Jackson) does."""
    if math.isfinite(f):
        return f
    return "NaN" if f != f else ("Infinity" if f > 0 else "-Infinity")


def _format_timestamp(ts: datetime, sep: str, zone: str) -> str:
    if ts.tzinfo is not None:
        ts = ts.astimezone(timezone.utc).replace(tzinfo=None)
    # isoformat zero-pads every field (strftime's %Y does not, for years below 1000).
    if not ts.microsecond:
        return ts.isoformat(sep, "seconds") + zone
    return ts.isoformat(sep, "microseconds").rstrip("0") + zone


def _map_to_json(pairs: list[tuple[Any, Any]], key: Convert | None, item: Convert | None, codec: JsonCodec) -> dict:
    out = {}
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
