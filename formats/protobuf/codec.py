"""Protobuf as Flink's `protobuf` format: each record one message of one type, no header.

The type is named by `message-class-name` (a full protobuf name, `package.Message`) and defined by a compiled
descriptor set (`descriptor-file`, `protoc --include_imports --descriptor_set_out=...`) or a generated Python
module (`python-module`, importable in every Spark process: formats/user_modules.py). Columns match the message's
fields by name.

Why per record: protobuf has no batch decoder in Python (neither the `protobuf` package nor Arrow reads a column
of messages), so each payload is parsed by the C (upb) parser one at a time; the parsed messages are then read a
column at a time (read.py) and each column becomes Arrow in one conversion (codec.columns_to_batch).
Writing is the mirror: rows out of Arrow once per batch, one message filled and serialized per row.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Literal, overload

import pyarrow as pa
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import DecodeError, EncodeError, Message

from ...kernel.errors import FormatOptionError
from ...kernel.option_kinds import FORMAT, Flag, Option, Text
from ..codec import IGNORE_PARSE_ERRORS, Codec, CodecContext, Decoded, Decoder, Encoder, columns_to_batch
from .read import MessagesReader, messages_reader
from .schema import (
    PROTOBUF_TYPES,
    BadValue,
    arrow_schema,
    message_class,
    message_descriptor,
    read_descriptor_set,
)
from .write import RowWriter, row_writer

MESSAGE_CLASS_NAME: Option[str | None] = Option(
    "message-class-name",
    None,
    FORMAT,
    "The message type, by its full protobuf name (`package.Message`; Flink names the generated Java class).",
    kind=Text(),
    note="required",
)
DESCRIPTOR_FILE: Option[str | None] = Option(
    "descriptor-file",
    None,
    FORMAT,
    "A compiled descriptor set defining the message type (`protoc --include_imports --descriptor_set_out=<file>`); "
    "read on the driver, shipped with the query.",
    kind=Text(),
)
PYTHON_MODULE: Option[str | None] = Option(
    "python-module",
    None,
    FORMAT,
    "Instead of `descriptor-file`: a generated Python module (`protoc --python_out`) defining the message type, "
    "importable on the driver, in the data source's planning process and on every executor (installed, or shipped "
    "with `--py-files` / `SparkContext.addPyFile`).",
    kind=Text(),
)
READ_DEFAULT_VALUES = Option(
    "read-default-values",
    "false",
    FORMAT,
    "An absent field that has presence (a message, `optional`, proto2) reads as its default value instead of null "
    "(proto3 scalars without `optional` always read their default).",
    kind=Flag(),
)
WRITE_NULL_STRING_LITERAL = Option(
    "write-null-string-literal",
    "",
    FORMAT,
    "Written for a null element of a repeated string field or a null string map value (protobuf cannot hold "
    "null there); other nulls protobuf cannot hold fail the row.",
    kind=Text(),
)


class MessageType:
    """A message type as options name it, picklable (a descriptor is not): rebuilt once per process."""

    def __init__(self, name: str, option: str, descriptor_set: bytes | None, module: str | None) -> None:
        self.name, self.option, self.descriptor_set, self.module = name, option, descriptor_set, module
        self._descriptor: Descriptor | None = None

    def __getstate__(self) -> dict[str, object]:
        return {**self.__dict__, "_descriptor": None}

    @property
    def descriptor(self) -> Descriptor:
        if self._descriptor is None:
            self._descriptor = message_descriptor(self.name, self.option, self.descriptor_set, self.module)
        return self._descriptor


def given_message_type(codec: Codec, required: bool, message_class: Option[str | None]) -> MessageType | None:
    """The message type options `message-class-name` (`message_class`: the codec's declaration of it) and
    `descriptor-file` / `python-module` give."""
    values, prefix = codec.option_values, codec.prefix
    name = (values.value(message_class) or "").strip()
    path = (values.value(DESCRIPTOR_FILE) or "").strip()
    module = (values.value(PYTHON_MODULE) or "").strip()
    message_option, file_option, module_option = (
        prefix + o.name for o in (MESSAGE_CLASS_NAME, DESCRIPTOR_FILE, PYTHON_MODULE)
    )
    if path and module:
        raise FormatOptionError(
            f"options '{file_option}' and '{module_option}' both define the message type: choose one"
        )
    if not name:
        if required or path or module:
            raise FormatOptionError(
                f"option '{message_option}' is required: the full protobuf name of the records' message "
                f"type (package.Message), defined by '{file_option}' or '{module_option}'"
            )
        return None
    if not (path or module):
        raise FormatOptionError(
            f"option '{message_option}' needs '{file_option}' (a compiled descriptor set) or "
            f"'{module_option}' (a generated Python module) to define message '{name}'"
        )
    descriptor_set = read_descriptor_set(path, file_option) if path else None
    message = MessageType(name, message_option, descriptor_set, module or None)
    _ = message.descriptor  # fail on the driver, before any task runs
    return message


#: The options of a message type and its conversions, both protobuf formats'.
MESSAGE_OPTIONS = (MESSAGE_CLASS_NAME, DESCRIPTOR_FILE, PYTHON_MODULE, READ_DEFAULT_VALUES, WRITE_NULL_STRING_LITERAL)


@overload
def message_options(
    codec: Codec, required: Literal[True], message_class: Option[str | None] = ...
) -> tuple[MessageType, bool, str]: ...
@overload
def message_options(
    codec: Codec, required: bool, message_class: Option[str | None] = ...
) -> tuple[MessageType | None, bool, str]: ...


def message_options(
    codec: Codec, required: bool, message_class: Option[str | None] = MESSAGE_CLASS_NAME
) -> tuple[MessageType | None, bool, str]:
    """The message type given (None when not `required` and not given), read-default-values and
    write-null-string-literal, as `codec`'s options set them (protobuf-confluent declares its own
    `message_class`: the same name with a doc of its own)."""
    values = codec.option_values
    return (
        given_message_type(codec, required, message_class),
        values.value(READ_DEFAULT_VALUES),
        values.value(WRITE_NULL_STRING_LITERAL),
    )


class ProtobufCodec(Codec):
    name = "protobuf"
    declared_options = (*MESSAGE_OPTIONS, IGNORE_PARSE_ERRORS)
    column_types = PROTOBUF_TYPES

    def __init__(self, options: Mapping[str, str], context: CodecContext) -> None:
        super().__init__(options, context)
        self.message, self.read_defaults, self.null_literal = message_options(self, required=True)

    def inferred_schema(self) -> pa.Schema:
        return arrow_schema(self.message.descriptor)

    def check_writable(self, schema: pa.Schema) -> None:
        row_writer(self.message.descriptor, schema, self.null_literal)

    def decoder(self, schema: pa.Schema) -> Decoder:
        descriptor = self.message.descriptor
        read = messages_reader(descriptor, schema, self.read_defaults)
        return ProtobufDecoder(schema, message_class(descriptor).FromString, read)

    def encoder(self, schema: pa.Schema) -> Encoder:
        descriptor = self.message.descriptor
        return ProtobufEncoder(message_class(descriptor), row_writer(descriptor, schema, self.null_literal))


def parse_failure(e: Exception) -> str:
    """Why a payload is not a message of its type (what the record error says)."""
    if isinstance(e, BadValue):
        return str(e)
    return f"not a protobuf message of the format's type ({type(e).__name__}: {e or 'cannot parse'})"


def parse_all(
    parse: Callable[[bytes], Message],
    payloads: Sequence[bytes],
    where: Sequence[int],
    starts: Iterable[int],
    failures: list[tuple[int, str]],
) -> tuple[list[Message], Sequence[int]]:
    """The messages of payloads `where` (each from its start) and the payload indexes they came from; the payloads
    that do not parse are added to `failures` (one comprehension; record by record only to name those at fault)."""
    try:
        return [parse(payloads[i][s:] if s else payloads[i]) for i, s in zip(where, starts)], where
    except (DecodeError, RuntimeError):  # upb raises DecodeError; some builds RuntimeError
        pass
    messages: list[Message] = []
    parsed: list[int] = []
    for i, s in zip(where, starts):
        try:
            messages.append(parse(payloads[i][s:] if s else payloads[i]))
        except (DecodeError, RuntimeError) as e:
            failures.append((i, parse_failure(e)))
            continue
        parsed.append(i)
    return messages, parsed


def messages_to_batch(
    messages: Sequence[Message],
    where: Sequence[int],
    read: MessagesReader,
    schema: pa.Schema,
    failures: list[tuple[int, str]],
) -> pa.RecordBatch:
    """Parsed messages (of payloads `where`) read into a batch by `read` (read.messages_reader); the
    records whose values fail or do not fit their columns are left out, added to `failures` (payload index, why)."""
    columns, bad = read(messages)
    keep: Sequence[int] = range(len(messages))
    if bad:
        keep = [j for j in keep if j not in bad]
        columns = [[values[j] for j in keep] for values in columns]
        failures.extend((where[j], why) for j, why in bad.items())
    batch, unfit = columns_to_batch(columns, schema, len(keep))
    failures.extend((where[keep[k]], why) for k, why in unfit)
    failures.sort()
    return batch


class ProtobufDecoder(Decoder):
    def __init__(self, schema: pa.Schema, parse: Callable[[bytes], Message], read: MessagesReader) -> None:
        self.schema, self.parse, self.read = schema, parse, read

    def decode(self, payloads: Sequence[bytes]) -> Decoded:
        failures: list[tuple[int, str]] = []
        everything = range(len(payloads))
        messages, where = parse_all(self.parse, payloads, everything, itertools.repeat(0), failures)
        batch = messages_to_batch(messages, list(where), self.read, self.schema, failures)
        return Decoded(batch, tuple(failures))


class ProtobufEncoder(Encoder):
    def __init__(self, cls: type[Message], fill: RowWriter, header: bytes = b"") -> None:
        self.cls, self.fill, self.header = cls, fill, header

    def encode(self, batch: pa.RecordBatch) -> list[bytes]:
        out = []
        cls, fill, header = self.cls, self.fill, self.header
        for row in batch.to_pylist():
            msg = cls()
            fill(msg, row)
            try:
                out.append(header + msg.SerializeToString(deterministic=True))
            except EncodeError as e:  # a proto2 `required` field left unset: its column is null
                raise BadValue(f"{e} (proto2 `required`): filter or coalesce the nulls of those columns") from None
        return out
