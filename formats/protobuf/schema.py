"""Protobuf message types for the protobuf formats: where a type comes from (a compiled descriptor set, a generated
Python module, or files a schema registry holds), its columns (Flink's type mapping), and what the converters
share (reading: read.py; writing: write.py; a type derived from columns: derived.py).
The converters are closures built once per (message type, table columns): no lookups by name at run time.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import Any

import pyarrow as pa
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from google.protobuf.message import Message

from ...kernel.errors import FormatOptionError
from ..codec import ColumnTypes
from ..user_modules import WHERE, import_user_module

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
#: Each scalar field type's column type (Flink's mapping).
SCALARS = {
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
#: The magnitude bits of each integer column type: the range a value read or written must fit.
INT_RANGES = {pa.int8(): 7, pa.int16(): 15, pa.int32(): 31, pa.int64(): 63}
#: The columns a protobuf message can hold (a MAP's keys: protobuf's integral and string map keys).
PROTOBUF_TYPES = ColumnTypes(
    ("BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL", "STRING", "BINARY",
     "TIMESTAMP", "TIMESTAMP_NTZ", "ARRAY", "MAP", "STRUCT"),
    map_keys=("STRING", "TINYINT", "SMALLINT", "INT", "BIGINT", "BOOLEAN"),
)  # fmt: skip


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
            pool = import_user_module(module).DESCRIPTOR.pool
        except (ImportError, AttributeError) as e:
            raise FormatOptionError(f"cannot import the generated protobuf module '{module}': {e}; {WHERE}") from None
    else:
        raise FormatOptionError(f"option '{option}' needs where its type is defined: a descriptor set or a module")
    try:
        return pool.FindMessageTypeByName(name.strip().lstrip("."))
    except KeyError:
        raise FormatOptionError(
            f"option '{option}': no message type '{name}' (give the full protobuf name, package.Message)"
        ) from None


def message_class(descriptor: Descriptor) -> type[Message]:
    return message_factory.GetMessageClass(descriptor)


def message_of(fd: FieldDescriptor) -> Descriptor:
    """The message type of a message field (of a map field: its entry message); the callers check fd.type first."""
    if fd.message_type is None:
        raise TypeError(f"protobuf field '{fd.full_name}' is not a message field")
    return fd.message_type


def enum_of(fd: FieldDescriptor) -> EnumDescriptor:
    """The enum type of an enum field; the callers check fd.type first."""
    if fd.enum_type is None:
        raise TypeError(f"protobuf field '{fd.full_name}' is not an enum field")
    return fd.enum_type


# -- Flink's type mapping -----------------------------------------------------------------------------------------


def arrow_schema(descriptor: Descriptor) -> pa.Schema:
    """The columns of a message type (the table's columns when none are given)."""
    return pa.schema([pa.field(f.name, _field_type(f, ())) for f in descriptor.fields])


def _field_type(fd: FieldDescriptor, seen: tuple[str, ...]) -> pa.DataType:
    if is_map(fd):
        entry = message_of(fd).fields_by_name
        key, value = entry["key"], entry["value"]
        return pa.map_(_single_type(key, seen), _single_type(value, seen))
    single = _single_type(fd, seen)
    return pa.list_(single) if is_repeated(fd) else single


def _single_type(fd: FieldDescriptor, seen: tuple[str, ...]) -> pa.DataType:
    if fd.type != F.TYPE_MESSAGE:
        return SCALARS[fd.type]
    message = message_of(fd)
    name = message.full_name
    if name == TIMESTAMP:
        return pa.timestamp("us", tz="UTC")
    if name in WRAPPERS:
        return WRAPPERS[name]
    if name in seen:
        raise FormatOptionError(f"message '{name}' contains itself (field '{fd.full_name}'): no column type holds it")
    return pa.struct([pa.field(f.name, _field_type(f, (*seen, name))) for f in message.fields])


def is_map(fd: FieldDescriptor) -> bool:
    """A map field (a repeated map-entry message)."""
    return fd.type == F.TYPE_MESSAGE and message_of(fd).GetOptions().map_entry and is_repeated(fd)


def is_repeated(fd: FieldDescriptor) -> bool:
    """A repeated field (a list, or a map's entries)."""
    repeated = getattr(fd, "is_repeated", None)  # protobuf 6+; `label` before (gone in 7)
    if repeated is None:
        repeated = fd.label == F.LABEL_REPEATED  # type: ignore[attr-defined]  # protobuf 5 (the stubs are 7's)
    return bool(repeated)


def fields_for(descriptor: Descriptor, columns: Iterable[pa.Field]) -> list[tuple[pa.Field, FieldDescriptor]]:
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


def mismatch(fd: FieldDescriptor, t: pa.DataType) -> FormatOptionError:
    """The error of a column whose type the field's values do not convert to exactly."""
    natural = _field_type(fd, ())
    return FormatOptionError(
        f"protobuf field '{fd.full_name}' ({natural}) cannot be read or written exactly as a column of type {t}; "
        f"declare the column as {natural}"
    )


def same(v: Any) -> Any:
    """The converter of a value that needs none."""
    return v
