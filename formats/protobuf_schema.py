"""Protobuf message types for the protobuf formats: where a type comes from (a compiled descriptor set, a generated
Python module, or files a schema registry holds), its columns (Flink's type mapping), and per-message converters
between a parsed message and one row of the table's columns (writing: protobuf_write.py).

The converters are closures built once per (message type, table columns): a parsed message is walked field by
field with no lookups by name at run time. Every narrowing is checked (an int64 into an INT column, a uint64
above BIGINT's maximum, a Timestamp with nanoseconds into microseconds): the value fails its record (BadValue)
instead of wrapping or truncating.
"""

from __future__ import annotations

import datetime as dt
import importlib
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Any

import pyarrow as pa
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from .codec import ColumnTypes
from .errors import FormatOptionError

F = FieldDescriptor
TIMESTAMP = "google.protobuf.Timestamp"
WRAPPERS = {
    "google.protobuf.DoubleValue": pa.float64(),
    "google.protobuf.FloatValue": pa.float32(),
    "google.protobuf.Int64Value": pa.int64(),
    "google.protobuf.UInt64Value": pa.int64(),
    "google.protobuf.Int32Value": pa.int32(),
    "google.protobuf.UInt32Value": pa.int64(),
    "google.protobuf.BoolValue": pa.bool_(),
    "google.protobuf.StringValue": pa.string(),
    "google.protobuf.BytesValue": pa.binary(),
}
_SCALARS = {
    F.TYPE_DOUBLE: pa.float64(),
    F.TYPE_FLOAT: pa.float32(),
    F.TYPE_INT32: pa.int32(),
    F.TYPE_SINT32: pa.int32(),
    F.TYPE_SFIXED32: pa.int32(),
    # Flink reads uint32 as INT (values above 2^31 wrap); BIGINT holds every value exactly.
    F.TYPE_UINT32: pa.int64(),
    F.TYPE_FIXED32: pa.int64(),
    F.TYPE_INT64: pa.int64(),
    F.TYPE_SINT64: pa.int64(),
    F.TYPE_SFIXED64: pa.int64(),
    F.TYPE_UINT64: pa.int64(),  # above 2^63-1: the record fails, or a DECIMAL(20, 0) column holds it
    F.TYPE_FIXED64: pa.int64(),
    F.TYPE_BOOL: pa.bool_(),
    F.TYPE_STRING: pa.string(),
    F.TYPE_BYTES: pa.binary(),
    F.TYPE_ENUM: pa.string(),
}
_SPECIAL = {*WRAPPERS, TIMESTAMP}  # message types read as one column value, not a STRUCT
_INT_RANGES = {pa.int8(): 7, pa.int16(): 15, pa.int32(): 31, pa.int64(): 63}
#: The columns a protobuf message can hold (a MAP's keys: protobuf's integral and string map keys).
PROTOBUF_TYPES = ColumnTypes(
    ("BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL", "STRING", "BINARY",
     "TIMESTAMP", "TIMESTAMP_NTZ", "ARRAY", "MAP", "STRUCT"),
    map_keys=("STRING", "TINYINT", "SMALLINT", "INT", "BIGINT", "BOOLEAN"),
)  # fmt: skip
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_EPOCH_NTZ = dt.datetime(1970, 1, 1)
_MICRO = dt.timedelta(microseconds=1)


class BadValue(ValueError):
    """A message's value that the table's column cannot hold exactly: its record fails with this reason."""


# -- where a message type comes from ------------------------------------------------------------------------------


def _add_file(pool: descriptor_pool.DescriptorPool, files: dict[str, descriptor_pb2.FileDescriptorProto], name: str,
              added: set[str]) -> None:  # fmt: skip
    """Add file `name` to `pool` after its dependencies; the well-known types come from protobuf itself."""
    if name in added:
        return
    added.add(name)
    proto = files.get(name)
    if proto is None:
        if is_builtin(name):  # confluent/ and google/type/ files join the default pool with confluent's module
            importlib.import_module("confluent_kafka.schema_registry.protobuf")
        try:
            known = descriptor_pool.Default().FindFileByName(name)
        except KeyError:
            raise FormatOptionError(
                f"the protobuf file '{name}' is imported but not given: compile the descriptor set with "
                "`protoc --include_imports --descriptor_set_out=...`"
            ) from None
        proto = descriptor_pb2.FileDescriptorProto()
        known.CopyToProto(proto)
    for dependency in proto.dependency:
        _add_file(pool, files, dependency, added)
    pool.Add(proto)


def is_builtin(name: str) -> bool:
    """A file every protobuf user has (never registered as a schema reference, as confluent-kafka does)."""
    return name.startswith(("google/protobuf/", "google/type/", "confluent/"))


def pool_of(files: Iterable[descriptor_pb2.FileDescriptorProto]) -> descriptor_pool.DescriptorPool:
    """A pool holding `files` and what they import."""
    by_name = {f.name: f for f in files}
    pool = descriptor_pool.DescriptorPool()
    added: set[str] = set()
    for name in by_name:
        _add_file(pool, by_name, name, added)
    return pool


def read_descriptor_set(path: str, option: str) -> bytes:
    """The bytes of a FileDescriptorSet file, checked to parse."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise FormatOptionError(f"option '{option}': cannot read '{path}': {e.strerror}") from None
    try:
        descriptor_pb2.FileDescriptorSet.FromString(data)
    except Exception:
        raise FormatOptionError(
            f"option '{option}': '{path}' is not a compiled descriptor set (FileDescriptorSet); make one with "
            "`protoc --include_imports --descriptor_set_out=<file> <your.proto>`"
        ) from None
    return data


def message_descriptor(name: str, option: str, descriptor_set: bytes | None, module: str | None) -> Descriptor:
    """The message type `name` (a full protobuf name, `package.Message`) of a descriptor set or a Python module."""
    if descriptor_set is not None:
        pool = pool_of(descriptor_pb2.FileDescriptorSet.FromString(descriptor_set).file)
    elif module is not None:
        try:
            pool = importlib.import_module(module).DESCRIPTOR.pool
        except (ImportError, AttributeError) as e:
            raise FormatOptionError(f"cannot import the generated protobuf module '{module}': {e}") from None
    else:
        raise FormatOptionError(f"option '{option}' needs where its type is defined: a descriptor set or a module")
    try:
        return pool.FindMessageTypeByName(name.strip().lstrip("."))
    except KeyError:
        raise FormatOptionError(
            f"option '{option}': no message type '{name}' (give the full protobuf name, package.Message)"
        ) from None


def message_class(descriptor: Descriptor) -> type:
    return message_factory.GetMessageClass(descriptor)


# -- Flink's type mapping -----------------------------------------------------------------------------------------


def arrow_schema(descriptor: Descriptor) -> pa.Schema:
    """The columns of a message type (the table's columns when none are given)."""
    return pa.schema([pa.field(f.name, _field_type(f, ())) for f in descriptor.fields])


def _field_type(fd: FieldDescriptor, seen: tuple[str, ...]) -> pa.DataType:
    if _is_map(fd):
        key, value = fd.message_type.fields_by_name["key"], fd.message_type.fields_by_name["value"]
        return pa.map_(_single_type(key, seen), _single_type(value, seen))
    single = _single_type(fd, seen)
    return pa.list_(single) if _repeated(fd) else single


def _single_type(fd: FieldDescriptor, seen: tuple[str, ...]) -> pa.DataType:
    if fd.type != F.TYPE_MESSAGE:
        return _SCALARS[fd.type]
    name = fd.message_type.full_name
    if name == TIMESTAMP:
        return pa.timestamp("us", tz="UTC")
    if name in WRAPPERS:
        return WRAPPERS[name]
    if name in seen:
        raise FormatOptionError(f"message '{name}' contains itself (field '{fd.full_name}'): no column type holds it")
    return pa.struct([pa.field(f.name, _field_type(f, (*seen, name))) for f in fd.message_type.fields])


def _is_map(fd: FieldDescriptor) -> bool:
    return fd.type == F.TYPE_MESSAGE and fd.message_type.GetOptions().map_entry and _repeated(fd)


def _repeated(fd: FieldDescriptor) -> bool:
    repeated = getattr(fd, "is_repeated", None)  # protobuf 6+; `label` before (gone in 7)
    return bool(repeated if repeated is not None else fd.label == F.LABEL_REPEATED)


def _fields_for(descriptor: Descriptor, columns: Iterable[pa.Field]) -> list[tuple[pa.Field, FieldDescriptor]]:
    """Each column's field of the message, by name (as Flink matches them)."""
    pairs = []
    for column in columns:
        fd = descriptor.fields_by_name.get(column.name)
        if fd is None:
            raise FormatOptionError(
                f"column '{column.name}' is not a field of protobuf message '{descriptor.full_name}' (its fields: "
                f"{', '.join(f.name for f in descriptor.fields)}); rename the column or choose another message type"
            )
        pairs.append((column, fd))
    return pairs


def _mismatch(fd: FieldDescriptor, t: pa.DataType) -> FormatOptionError:
    natural = _field_type(fd, ())
    return FormatOptionError(
        f"protobuf field '{fd.full_name}' ({natural}) cannot be read or written exactly as a column of type {t}; "
        f"declare the column as {natural}"
    )


# -- reading: message -> row --------------------------------------------------------------------------------------


def row_reader(descriptor: Descriptor, columns: Iterable[pa.Field], defaults: bool) -> Callable[[Any], dict]:
    """msg -> {column: value} for pa.array with the columns' struct type. `defaults`: absent fields with presence
    read as their default value (Flink's read-default-values) instead of null."""
    readers = [(c.name, _field_reader(fd, c.type, defaults)) for c, fd in _fields_for(descriptor, columns)]
    return lambda msg: {name: read(msg) for name, read in readers}


def _field_reader(fd: FieldDescriptor, t: pa.DataType, defaults: bool) -> Callable[[Any], Any]:
    name = fd.name
    if _is_map(fd):
        if not pa.types.is_map(t):
            raise _mismatch(fd, t)
        key = _value_reader(fd.message_type.fields_by_name["key"], t.key_type, defaults)
        value = _value_reader(fd.message_type.fields_by_name["value"], t.item_type, defaults)
        return lambda m: [(key(k), value(v)) for k, v in getattr(m, name).items()]
    if _repeated(fd):
        if not pa.types.is_list(t):
            raise _mismatch(fd, t)
        element = _value_reader(fd, t.value_type, defaults)
        return lambda m: [element(v) for v in getattr(m, name)]
    value = _value_reader(fd, t, defaults)
    if fd.has_presence and not defaults:
        return lambda m: value(getattr(m, name)) if m.HasField(name) else None
    return lambda m: value(getattr(m, name))


def _value_reader(fd: FieldDescriptor, t: pa.DataType, defaults: bool) -> Callable[[Any], Any]:
    """One value of field `fd` (an element, for a repeated field) -> what its column takes."""
    if fd.type == F.TYPE_MESSAGE:
        name = fd.message_type.full_name
        if name == TIMESTAMP and (pa.types.is_timestamp(t)):
            return _timestamp_reader(fd)
        if name in WRAPPERS and not pa.types.is_struct(t):
            inner = _value_reader(fd.message_type.fields_by_name["value"], t, defaults)
            return lambda w: inner(w.value)
        if not pa.types.is_struct(t):
            raise _mismatch(fd, t)
        return row_reader(fd.message_type, list(t), defaults)
    natural = _SCALARS[fd.type]
    if fd.type == F.TYPE_ENUM:
        if t != pa.string():
            raise _mismatch(fd, t)
        names = {v.number: v.name for v in fd.enum_type.values}

        def enum_name(number: int) -> str:
            if number not in names:
                raise BadValue(f"field '{fd.full_name}': {number} is not a value of enum '{fd.enum_type.full_name}'")
            return names[number]

        return enum_name
    if natural == t or (natural == pa.float32() and t == pa.float64()):
        if fd.type in (F.TYPE_UINT64, F.TYPE_FIXED64):
            return _int_in_range(fd, 63)
        return _same
    if pa.types.is_integer(natural) and t in _INT_RANGES:
        return _int_in_range(fd, _INT_RANGES[t])
    if fd.type in (F.TYPE_UINT64, F.TYPE_FIXED64) and pa.types.is_decimal(t) and t.precision - t.scale >= 20:
        return Decimal
    raise _mismatch(fd, t)


def _same(v: Any) -> Any:
    return v


def _int_in_range(fd: FieldDescriptor, bits: int) -> Callable[[int], int]:
    low, high = -(1 << bits), (1 << bits) - 1

    def checked(v: int) -> int:
        if low <= v <= high:
            return v
        hint = " (a DECIMAL(20, 0) column holds every uint64)" if bits == 63 else ""
        raise BadValue(f"field '{fd.full_name}': {v} does not fit the column's {bits + 1}-bit integer{hint}")

    return checked


def _timestamp_reader(fd: FieldDescriptor) -> Callable[[Any], int]:
    def micros(ts: Any) -> int:
        if ts.nanos % 1000:
            raise BadValue(
                f"field '{fd.full_name}': a Timestamp with nanoseconds ({ts.seconds}s {ts.nanos}ns) does not fit a "
                "TIMESTAMP column (microseconds); read it as STRUCT<seconds BIGINT, nanos INT>"
            )
        return ts.seconds * 1_000_000 + ts.nanos // 1000

    return micros
