"""Writing the protobuf formats: a row of the table's columns -> the fields of a message, set through protobuf's own
setters (which refuse an int out of a field's range). Every null protobuf cannot hold fails its row (BadValue)
naming the field and what to change, except a null string element: Flink's write-null-string-literal."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
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
    message_of,
    mismatch,
    same,
)

_SPECIAL = {*WRAPPERS, TIMESTAMP}  # message types written from one column value, not a STRUCT
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_EPOCH_NTZ = dt.datetime(1970, 1, 1)
_MICRO = dt.timedelta(microseconds=1)

#: (msg, {column: value}) -> msg's fields set.
RowWriter = Callable[[Message, Mapping[str, object]], None]


def row_writer(descriptor: Descriptor, columns: Iterable[pa.Field], null_literal: str) -> RowWriter:
    """(msg, {column: value}) -> msg's fields set. A null element of a repeated / map string field is written as
    `null_literal` (Flink's write-null-string-literal); any other null protobuf cannot hold fails the row."""
    writers = [(c.name, _field_writer(fd, c.type, null_literal)) for c, fd in fields_for(descriptor, columns)]

    def write(msg: Message, row: Mapping[str, object]) -> None:
        for name, set_field in writers:
            set_field(msg, row[name])

    return write


def _no_null(fd: FieldDescriptor, what: str) -> BadValue:
    if what == "the value":
        return BadValue(
            f"the value of protobuf field '{fd.full_name}' is null, which the field cannot hold (a proto3 field "
            "without `optional`): filter or coalesce the nulls, or declare the field `optional` in the .proto"
        )
    return BadValue(
        f"{what} of protobuf field '{fd.full_name}' is null: protobuf has no null there (a null string element is "
        "written as option write-null-string-literal; other types have none): filter or coalesce the nulls"
    )


def _field_writer(fd: FieldDescriptor, t: pa.DataType, null_literal: str) -> Callable[[Any, Any], None]:
    name = fd.name
    if is_map(fd):
        if not pa.types.is_map(t):
            raise mismatch(fd, t)
        entry = message_of(fd).fields_by_name
        key_fd, value_fd = entry["key"], entry["value"]
        key = _value_writer(key_fd, t.key_type)
        if value_fd.type == F.TYPE_MESSAGE and message_of(value_fd).full_name not in _SPECIAL:
            fill = row_writer(message_of(value_fd), list(t.item_type), null_literal)

            def set_message_map(m: Any, pairs: Any) -> None:
                for k, v in pairs or ():
                    if v is None:
                        raise _no_null(fd, "a map value")
                    fill(getattr(m, name)[key(k)], v)

            return set_message_map
        value = _element_writer(value_fd, t.item_type, null_literal, "a map value", fd)

        def set_map(m: Any, pairs: Any) -> None:
            target = getattr(m, name)
            for k, v in pairs or ():
                value(target, key(k), v)

        return set_map
    if is_repeated(fd):
        if not pa.types.is_list(t):
            raise mismatch(fd, t)
        if fd.type == F.TYPE_MESSAGE and message_of(fd).full_name not in _SPECIAL:
            fill = row_writer(message_of(fd), list(t.value_type), null_literal)

            def set_messages(m: Any, items: Any) -> None:
                target = getattr(m, name)
                for v in items or ():
                    if v is None:
                        raise _no_null(fd, "an element")
                    fill(target.add(), v)

            return set_messages
        element = _element_writer(fd, t.value_type, null_literal, "an element", fd)

        def set_list(m: Any, items: Any) -> None:
            target = getattr(m, name)
            for v in items or ():
                element(target, None, v)

        return set_list
    if fd.type == F.TYPE_MESSAGE and message_of(fd).full_name not in _SPECIAL:
        if not pa.types.is_struct(t):
            raise mismatch(fd, t)
        fill = row_writer(message_of(fd), list(t), null_literal)

        def set_message(m: Any, v: Any) -> None:
            if v is not None:
                sub = getattr(m, name)
                sub.SetInParent()
                fill(sub, v)

        return set_message
    value = _value_writer(fd, t)
    if fd.type == F.TYPE_MESSAGE:  # Timestamp, wrappers

        def set_wrapped(m: Any, v: Any) -> None:
            if v is not None:
                value(getattr(m, name), v)

        return set_wrapped
    present = fd.has_presence

    def set_scalar(m: Any, v: Any) -> None:
        if v is None:
            if not present:
                raise _no_null(fd, "the value")
            return
        setattr(m, name, value(v))

    return set_scalar


def _element_writer(
    fd: FieldDescriptor, t: pa.DataType, null_literal: str, what: str, owner: FieldDescriptor
) -> Callable[[Any, Any, Any], None]:
    """(container, key or None, value) -> the value added to a repeated field or set in a map."""
    value = _value_writer(fd, t)
    is_string = fd.type == F.TYPE_STRING
    if fd.type == F.TYPE_MESSAGE:  # Timestamp or a wrapper: set inside the element message

        def put_message(target: Any, key: Any, v: Any) -> None:
            if v is None:
                raise _no_null(owner, what)
            value(target.add() if key is None else target[key], v)

        return put_message

    def put(target: Any, key: Any, v: Any) -> None:
        if v is None:
            if not is_string:
                raise _no_null(owner, what)
            v = null_literal
        else:
            v = value(v)
        if key is None:
            target.append(v)
        else:
            target[key] = v

    return put


def _value_writer(fd: FieldDescriptor, t: pa.DataType) -> Callable[..., Any]:
    """A column value -> the field's value (for Timestamp and wrappers: (message, value) -> message set)."""
    if fd.type == F.TYPE_MESSAGE:
        message = message_of(fd)
        name = message.full_name
        if name == TIMESTAMP and pa.types.is_timestamp(t):
            epoch = _EPOCH if t.tz else _EPOCH_NTZ

            def set_timestamp(ts: Any, v: dt.datetime) -> None:
                seconds, micros = divmod((v - epoch) // _MICRO, 1_000_000)
                ts.seconds, ts.nanos = seconds, micros * 1000

            return set_timestamp
        if name in WRAPPERS and not pa.types.is_struct(t):
            inner = _value_writer(message.fields_by_name["value"], t)

            def set_wrapper(w: Any, v: Any) -> None:
                w.value = inner(v)

            return set_wrapper
        raise mismatch(fd, t)
    natural = SCALARS[fd.type]
    if fd.type == F.TYPE_ENUM:
        if t != pa.string():
            raise mismatch(fd, t)
        enum = enum_of(fd)
        numbers = {v.name: v.number for v in enum.values}

        def enum_number(v: str) -> int:
            if v not in numbers:
                raise BadValue(
                    f"'{v}' is not a value of enum '{enum.full_name}' (field '{fd.full_name}'): its values "
                    f"are {', '.join(numbers)}"
                )
            return numbers[v]

        return enum_number
    if natural == t or (t == pa.float32() and natural == pa.float64()):
        return same
    if pa.types.is_integer(natural) and t in INT_RANGES:  # protobuf's setter refuses a value out of its range
        return same
    if fd.type in (F.TYPE_UINT64, F.TYPE_FIXED64) and pa.types.is_decimal(t) and t.scale == 0:
        return _whole
    raise mismatch(fd, t)


def _whole(v: Decimal) -> int:
    return int(v)
