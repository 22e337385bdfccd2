"""Reading the protobuf formats: parsed messages -> the table's columns, a column at a time (writing:
write.py).

Why a column at a time: protobuf has no batch decoder in Python, so each payload is parsed by protobuf's C (upb)
parser alone, and every field read is an attribute access on a message. A column whose field is a scalar read as
it is (no range check, no enum name) is read for all messages in one `map` over them, without a Python frame per
message; other columns call their converter (built once per message type and columns) per message. Every
narrowing is checked (an int64 into an INT column, a uint64 above BIGINT's maximum, a Timestamp with nanoseconds
into microseconds): the value fails its record (BadValue) instead of wrapping or truncating.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from decimal import Decimal
from operator import attrgetter, methodcaller
from typing import Any

import pyarrow as pa
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from .schema import (
    INT_RANGES,
    SCALARS,
    TIMESTAMP,
    WRAPPERS,
    BadValue,
    F,
    enum_of,
    fields_for,
    is_map,
    is_repeated,
    message_class,
    message_of,
    mismatch,
    same,
)

#: [msg] -> (a column's values, {index: why it fails})
Column = Callable[[Sequence[Message]], tuple[list[object], dict[int, str]]]
MessagesReader = Callable[[Sequence[Message]], tuple[list[list[object]], dict[int, str]]]


def messages_reader(
    descriptor: Descriptor, columns: Iterable[pa.Field], defaults: bool, reader: Descriptor | None = None
) -> MessagesReader:
    """[msg] -> (one list of values per column, {message index: why its record fails}). `defaults`: absent fields
    with presence read as their default value (Flink's read-default-values) instead of null. A record that fails
    has a value in every column still (None where it failed): leave it out.

    `reader`: the message type the columns are fields of, when the messages are of another version of it
    (`descriptor`, the writer's): a column reads the writer's field of its field's number (protobuf's identity of a
    field, kept across renames); one the writer lacks reads as protobuf reads an absent field (its default, or null
    where it has presence and `defaults` is false), and the writer's other fields are skipped."""
    if reader is None:
        readers = [_column_reader(fd, c.type, defaults) for c, fd in fields_for(descriptor, columns)]
    else:
        absent = message_class(reader)()  # what a field the writer lacks reads as
        readers = [_resolved_reader(descriptor, absent, fd, c.type, defaults) for c, fd in fields_for(reader, columns)]

    def read(messages: Sequence[Message]) -> tuple[list[list[object]], dict[int, str]]:
        columns: list[list[object]] = []
        failed: dict[int, str] = {}
        for column in readers:
            values, bad = column(messages)
            columns.append(values)
            for j, why in bad.items():
                failed.setdefault(j, why)  # the first column's reason, as a row read field by field gives
        return columns, failed

    return read


def _resolved_reader(
    writer: Descriptor, absent: Message, fd: FieldDescriptor, t: pa.DataType, defaults: bool
) -> Column:
    """The column of reader field `fd` read from messages of `writer` (messages_reader; `absent`: an empty message
    of the reader's type)."""
    written = writer.fields_by_number.get(fd.number)
    if written is not None:
        return _column_reader(written, t, defaults)
    values, _ = _column_reader(fd, t, defaults)([absent])
    return lambda msgs: (values * len(msgs), {})


def _column_reader(fd: FieldDescriptor, t: pa.DataType, defaults: bool) -> Column:
    name = fd.name
    plain = not (is_map(fd) or is_repeated(fd)) and fd.type not in (F.TYPE_MESSAGE, F.TYPE_ENUM)
    if plain and _value_reader(fd, t, defaults) is same:
        get = attrgetter(name)
        if fd.has_presence and not defaults:
            has = methodcaller("HasField", name)
            return lambda msgs: ([v if h else None for v, h in zip(map(get, msgs), map(has, msgs))], {})
        return lambda msgs: (list(map(get, msgs)), {})
    read = _field_reader(fd, t, defaults)

    def column(msgs: Sequence[Message]) -> tuple[list[object], dict[int, str]]:
        try:
            return [read(m) for m in msgs], {}
        except BadValue:
            pass
        values: list[object] = []
        bad: dict[int, str] = {}
        for j, m in enumerate(msgs):  # again, one by one, to name the records at fault
            try:
                values.append(read(m))
            except BadValue as e:
                values.append(None)
                bad[j] = str(e)
        return values, bad

    return column


def row_reader(
    descriptor: Descriptor, columns: Iterable[pa.Field], defaults: bool
) -> Callable[[Message], dict[str, object]]:
    """msg -> {column: value} for pa.array with the columns' struct type. `defaults`: absent fields with presence
    read as their default value (Flink's read-default-values) instead of null."""
    readers = [(c.name, _field_reader(fd, c.type, defaults)) for c, fd in fields_for(descriptor, columns)]
    return lambda msg: {name: read(msg) for name, read in readers}


def _field_reader(fd: FieldDescriptor, t: pa.DataType, defaults: bool) -> Callable[[Any], Any]:
    name = fd.name
    if is_map(fd):
        if not pa.types.is_map(t):
            raise mismatch(fd, t)
        entry = message_of(fd).fields_by_name
        key = _value_reader(entry["key"], t.key_type, defaults)
        value = _value_reader(entry["value"], t.item_type, defaults)
        return lambda m: [(key(k), value(v)) for k, v in getattr(m, name).items()]
    if is_repeated(fd):
        if not pa.types.is_list(t):
            raise mismatch(fd, t)
        element = _value_reader(fd, t.value_type, defaults)
        return lambda m: [element(v) for v in getattr(m, name)]
    value = _value_reader(fd, t, defaults)
    if fd.has_presence and not defaults:
        return lambda m: value(getattr(m, name)) if m.HasField(name) else None
    return lambda m: value(getattr(m, name))


def _value_reader(fd: FieldDescriptor, t: pa.DataType, defaults: bool) -> Callable[[Any], Any]:
    """One value of field `fd` (an element, for a repeated field) -> what its column takes."""
    if fd.type == F.TYPE_MESSAGE:
        message = message_of(fd)
        name = message.full_name
        if name == TIMESTAMP and (pa.types.is_timestamp(t)):
            return _timestamp_reader(fd)
        if name in WRAPPERS and not pa.types.is_struct(t):
            inner = _value_reader(message.fields_by_name["value"], t, defaults)
            return lambda w: inner(w.value)
        if not pa.types.is_struct(t):
            raise mismatch(fd, t)
        return row_reader(message, list(t), defaults)
    natural = SCALARS[fd.type]
    if fd.type == F.TYPE_ENUM:
        if t != pa.string():
            raise mismatch(fd, t)
        enum = enum_of(fd)
        names = {v.number: v.name for v in enum.values}

        def enum_name(number: int) -> str:
            if number not in names:
                raise BadValue(f"field '{fd.full_name}': {number} is not a value of enum '{enum.full_name}'")
            return names[number]

        return enum_name
    if natural == t or (natural == pa.float32() and t == pa.float64()):
        if fd.type in (F.TYPE_UINT64, F.TYPE_FIXED64):
            return _int_in_range(fd, 63)
        return same
    if pa.types.is_integer(natural) and t in INT_RANGES:
        return _int_in_range(fd, INT_RANGES[t])
    if fd.type in (F.TYPE_UINT64, F.TYPE_FIXED64) and pa.types.is_decimal(t) and t.precision - t.scale >= 20:
        return Decimal
    raise mismatch(fd, t)


def _int_in_range(fd: FieldDescriptor, bits: int) -> Callable[[int], int]:
    low, high = -(1 << bits), (1 << bits) - 1

    def checked(v: int) -> int:
        if low <= v <= high:
            return v
        hint = " (a DECIMAL(20, 0) column holds every uint64)" if bits == 63 else ""
        raise BadValue(f"field '{fd.full_name}': {v} does not fit the column's {bits + 1}-bit integer{hint}")

    return checked


def _timestamp_reader(fd: FieldDescriptor) -> Callable[[Any], int]:
    def micros(ts: Any) -> int:  # a Timestamp message of the type's own pool (no class known here)
        seconds: int = ts.seconds
        nanos: int = ts.nanos
        if nanos % 1000:
            raise BadValue(
                f"field '{fd.full_name}': a Timestamp with nanoseconds ({seconds}s {nanos}ns) does not fit a "
                "TIMESTAMP column (microseconds); read it as STRUCT<seconds BIGINT, nanos INT>"
            )
        return seconds * 1_000_000 + nanos // 1000

    return micros
