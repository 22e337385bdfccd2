"""The column reads of the avro vector decoder (vector.py): each reads one Avro primitive for every
record of a chunk at once, with numpy, and converts the values to the Arrow column the table wants. Any
record they cannot vouch for raises Unsure, which sends the whole chunk to fastavro.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias

import numpy as np
import pyarrow as pa

from .schema import AvroDict

# The values fastavro turns into Python dates / datetimes (outside them it raises).
_DATE_DAYS = (-719_162, 2_932_896)
_MICROS = (-62_135_596_800_000_000, 253_402_300_799_999_999)
_MILLIS = (-62_135_596_800_000, 253_402_300_799_999)
_INT_RANGES = {
    pa.int8(): (-(2**7), 2**7 - 1),
    pa.int16(): (-(2**15), 2**15 - 1),
    pa.int32(): (-(2**31), 2**31 - 1),
}


#: A primitive read: (data, positions, ends) -> (the values, numpy's or Arrow's, and the positions after them).
PrimitiveRead: TypeAlias = Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray | pa.Array, np.ndarray]]
#: A conversion of the values a primitive read gives (numpy's or Arrow's) into the column the table wants.
Convert: TypeAlias = Callable[[np.ndarray | pa.Array], pa.Array]
#: A conversion for a column of the given type, or None when it cannot hold the values.
Conversion: TypeAlias = Callable[[pa.DataType], Convert | None]
# pyarrow's own conversion, as one (pyarrow is untyped here).
_ARRAY: Convert = pa.array


class Unsure(Exception):
    """Some record of the chunk is not one this path vouches for: the chunk goes to fastavro."""


# -- primitive reads: (data, positions, ends) -> (numpy values, positions after) ----------------------


def read_long(data: np.ndarray, pos: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Zigzag varints, all rows at once: each round goes on with the rows whose byte had the high bit."""
    byte = data[pos]
    value = (byte & 0x7F).astype(np.uint64)
    length = np.ones(len(pos), dtype=np.int64)
    going = np.flatnonzero(byte & 0x80)
    shift = 7
    while going.size:
        if shift > 63:
            raise Unsure  # more than 10 bytes
        byte = data[pos[going] + length[going]]
        if shift == 63 and (byte > 1).any():
            raise Unsure  # beyond 64 bits: fastavro's value is not a long
        value[going] |= (byte & 0x7F).astype(np.uint64) << np.uint64(shift)
        length[going] += 1
        going = going[(byte & 0x80) != 0]
        shift += 7
    after = pos + length
    if (after > ends).any():
        raise Unsure
    decoded = (value >> np.uint64(1)).astype(np.int64) ^ -((value & np.uint64(1)).astype(np.int64))
    return decoded, after


def _fixed_width(width: int, dtype: str) -> PrimitiveRead:
    def read(data: np.ndarray, pos: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        after = pos + width
        if (after > ends).any():
            raise Unsure
        gathered = data[pos[:, None] + np.arange(width)]
        return gathered.view(dtype).reshape(len(pos)), after

    return read


def _boolean(data: np.ndarray, pos: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if (pos >= ends).any():
        raise Unsure
    byte = data[pos]
    if (byte > 1).any():
        raise Unsure  # fastavro reads any non-zero byte as true; only 0 and 1 are Avro's
    return byte == 1, pos + 1


def _bytes(data: np.ndarray, pos: np.ndarray, ends: np.ndarray) -> tuple[pa.Array, np.ndarray]:
    size, pos = read_long(data, pos, ends)
    if (size < 0).any():
        raise Unsure
    return _gather(data, pos, size, ends)


def read_fixed(schema: AvroDict) -> PrimitiveRead:
    width = schema["size"]

    def read(data: np.ndarray, pos: np.ndarray, ends: np.ndarray) -> tuple[pa.Array, np.ndarray]:
        return _gather(data, pos, np.full(len(pos), width, dtype=np.int64), ends)

    return read


def _gather(data: np.ndarray, pos: np.ndarray, size: np.ndarray, ends: np.ndarray) -> tuple[pa.Array, np.ndarray]:
    """The bytes at data[pos : pos + size] of every row as an Arrow binary array.

    Built as a binary-view array pointing into the chunk's buffer (16 bytes per value: its length, then up
    to 12 bytes inline, or a 4-byte prefix, buffer 0 and the offset) that Arrow copies out in one cast:
    five times faster than gathering the bytes with numpy."""
    # Compared as room left, not as pos + size: a mutated length near 2**63 would overflow the sum past the check
    # and point the views outside the buffer.
    if (size > ends - pos).any() or len(data) >= 2**31:
        raise Unsure
    after = pos + size
    views = np.zeros((len(pos), 4), dtype="<i4")
    views[:, 0] = size
    octets = views.view(np.uint8)
    short = size <= 12
    if short.any():
        rows = np.flatnonzero(short)
        inline = data[pos[rows, None] + _INLINE]  # the buffer's padding covers reads past the end
        inline[size[rows, None] <= _INLINE] = 0  # a short value's unused inline bytes are zero
        octets[rows, 4:] = inline
    if not short.all():
        rows = np.flatnonzero(~short)
        octets[rows, 4:8] = data[pos[rows, None] + _INLINE[:4]]  # prefix; buffer index 0
        views[rows, 3] = pos[rows]
    buffers = [None, pa.py_buffer(views), pa.py_buffer(data)]
    return pa.Array.from_buffers(pa.binary_view(), len(pos), buffers).cast(pa.binary()), after


_INLINE = np.arange(12)


def read_enum(schema: AvroDict) -> PrimitiveRead:
    symbols = pa.array(schema["symbols"], pa.string())

    def read(data: np.ndarray, pos: np.ndarray, ends: np.ndarray) -> tuple[pa.Array, np.ndarray]:
        index, pos = read_long(data, pos, ends)
        if ((index < 0) | (index >= len(symbols))).any():
            raise Unsure
        return symbols.take(index), pos

    return read


# -- conversions: numpy values -> the Arrow column the table wants (None: not this pair) ----------------


def _integers(target: pa.DataType) -> Convert | None:
    if target == pa.int64():
        return _ARRAY
    if target in _INT_RANGES:
        low, high = _INT_RANGES[target]
        dtype = target.to_pandas_dtype()

        def narrow(values: np.ndarray) -> pa.Array:
            if len(values) and (values.min() < low or values.max() > high):
                raise Unsure  # fastavro's value does not fit the column: its record fails there
            return pa.array(values.astype(dtype))

        return narrow
    return None


def _promoted(target: pa.DataType) -> Convert | None:
    """int or long read as float or double: fastavro's float(value), then the column's type."""
    if target in (pa.float32(), pa.float64()):
        return lambda values: pa.array(values.astype(np.float64)).cast(target)
    return None


def _floats(target: pa.DataType) -> Convert | None:
    if target == pa.float32():
        return _ARRAY
    if target == pa.float64():  # float promoted to double, as fastavro does

        def widen(values: np.ndarray) -> pa.Array:
            with np.errstate(invalid="ignore"):  # a signalling NaN becomes a quiet one, as in C
                return pa.array(values.astype(np.float64))

        return widen
    return None


def _text(target: pa.DataType) -> Convert | None:
    if not pa.types.is_string(target):
        return None

    def convert(values: pa.Array) -> pa.Array:
        try:
            return values.cast(pa.string())  # checks the UTF-8
        except pa.ArrowInvalid:
            raise Unsure from None

    return convert


def to_binary(target: pa.DataType) -> Convert | None:
    return (lambda values: values) if pa.types.is_binary(target) else None


def to_symbols(target: pa.DataType) -> Convert | None:
    return (lambda symbols: symbols) if pa.types.is_string(target) else None


def _within(bounds: tuple[int, int], scale: int, t: pa.DataType) -> Convert:
    low, high = bounds

    def convert(values: np.ndarray) -> pa.Array:
        if len(values) and (values.min() < low or values.max() > high):
            raise Unsure  # fastavro cannot make a Python date / datetime of it
        if t == pa.date32():
            return pa.array(values.astype(np.int32)).cast(t)
        return pa.array(values * scale).cast(t)

    return convert


def _days(target: pa.DataType) -> Convert | None:
    return _within(_DATE_DAYS, 1, target) if target == pa.date32() else None


def _times(scale: int) -> Conversion:
    """time-millis / time-micros into a TIME (nanoseconds of the day); outside the day fastavro names the record."""

    def conversion(target: pa.DataType) -> Convert | None:
        if not pa.types.is_time(target):
            return None

        def convert(values: np.ndarray) -> pa.Array:
            if len(values) and (values.min() < 0 or values.max() >= 86_400 * 1_000_000_000 // scale):
                raise Unsure
            return pa.array(values.astype(np.int64) * scale).cast(target)

        return convert

    return conversion


def _timestamps(zoned: bool, bounds: tuple[int, int], scale: int) -> Conversion:
    """An instant (`zoned`) into a TIMESTAMP, or into a TIMESTAMP_NTZ as its wall clock in UTC (Flink's legacy
    mapping of TIMESTAMP(3) writes that); a local timestamp into a TIMESTAMP_NTZ only."""

    def conversion(target: pa.DataType) -> Convert | None:
        if not (pa.types.is_timestamp(target) and target.unit == "us" and (zoned or target.tz is None)):
            return None
        return _within(bounds, scale, target)

    return conversion


PRIMITIVE_READS: dict[str, PrimitiveRead] = {
    "boolean": _boolean,
    "float": _fixed_width(4, "<f4"),
    "double": _fixed_width(8, "<f8"),
    "string": _bytes,
    "bytes": _bytes,
}
# (writer type, reader type) -> the conversion of the values read into a column of the table's type.
CONVERT: dict[tuple[str, str], Conversion] = {
    ("boolean", "boolean"): lambda t: pa.array if t == pa.bool_() else None,
    ("int", "int"): _integers,
    ("int", "long"): _integers,
    ("long", "long"): _integers,
    ("int", "float"): _promoted,
    ("int", "double"): _promoted,
    ("long", "float"): _promoted,
    ("long", "double"): _promoted,
    ("float", "float"): _floats,
    ("float", "double"): _floats,
    ("double", "double"): lambda t: pa.array if t == pa.float64() else None,
    ("string", "string"): _text,
    ("bytes", "bytes"): to_binary,
}
LOGICAL: dict[tuple[str, str], Conversion] = {
    ("int", "date"): _days,
    ("int", "time-millis"): _times(1_000_000),
    ("long", "time-micros"): _times(1_000),
    ("long", "timestamp-micros"): _timestamps(True, _MICROS, 1),
    ("long", "timestamp-millis"): _timestamps(True, _MILLIS, 1000),
    ("long", "local-timestamp-micros"): _timestamps(False, _MICROS, 1),
    ("long", "local-timestamp-millis"): _timestamps(False, _MILLIS, 1000),
}
