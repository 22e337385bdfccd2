"""Protobuf in the Confluent wire format, with a Schema Registry: what confluent-kafka's (and Confluent's Java)
ProtobufSerializer writes and ProtobufDeserializer reads; Confluent's Flink names the format `proto-registry`.

A record: magic byte 0, the 4-byte big-endian schema id, the message indexes (which message of the schema's
file: a zigzag-varint count then that many zigzag-varint indexes, nested types after their parents; a single 0
for the file's first message), then the message. Reading fetches each record's writer schema by id (as a
serialized FileDescriptorProto, references resolved: the files it imports, each under its own subject) and reads
the message it names into the table's columns by field name. Writing registers (or looks up) the message type
options `message-class-name` and `descriptor-file` / `python-module` give (else one derived from the columns:
derived.py), its imported files first under their file names (confluent-kafka's reference subject strategy),
under the subjects avro-confluent uses.

Registry settings, subjects and the registration checks are every registry format's (confluent/registry_codec.py);
the message conversions are the protobuf format's (schema.py, read.py, write.py), per record for the reason codec.py
gives.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import TypeVar

import numpy as np
import pyarrow as pa
from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import Message

from ...kernel.errors import FormatOptionError
from ..codec import IGNORE_PARSE_ERRORS, CodecContext, Decoded, Decoder, Encoder, empty_batch
from ..confluent.registry import SchemaRegistry
from ..confluent.registry_codec import REGISTRY_OPTIONS, RegistryCodec
from ..confluent.registry_errors import RegistryError, SchemaNotUsable
from ..confluent.wire import HEADER, MAGIC, framed_ids, header, not_framed
from ..payloads import Layout
from .codec import (
    MESSAGE_CLASS_NAME,
    MESSAGE_OPTIONS,
    ProtobufEncoder,
    message_options,
    messages_to_batch,
    parse_all,
)
from .derived import derived_message
from .read import MessagesReader, messages_reader
from .registered_files import files_to_register, same_file, serialized_bytes
from .schema import (
    PROTOBUF_TYPES,
    arrow_schema,
    message_class,
    pool_of,
)
from .write import row_writer

NOT_FRAMED = not_framed("the message indexes and the Protobuf message")


#: message-class-name, optional here.
CONFLUENT_MESSAGE_CLASS_NAME = replace(
    MESSAGE_CLASS_NAME,
    doc=MESSAGE_CLASS_NAME.doc + " When set, the message type written and the table's columns on read; when not, a "
    "message `Row` derived from the columns is written.",
    note="",
)


class ProtobufConfluentCodec(RegistryCodec):
    name = "protobuf-confluent"
    declared_options = (
        *REGISTRY_OPTIONS,
        CONFLUENT_MESSAGE_CLASS_NAME,
        *MESSAGE_OPTIONS[1:],
        IGNORE_PARSE_ERRORS,
    )
    column_types = PROTOBUF_TYPES

    def __init__(self, options: Mapping[str, str], context: CodecContext) -> None:
        super().__init__(options, context)
        self.message, self.read_defaults, self.null_literal = message_options(
            self, required=False, message_class=CONFLUENT_MESSAGE_CLASS_NAME
        )

    def _writer_type(self, schema: pa.Schema) -> Descriptor:
        """The message type given, else the one derived from the columns (as avro-confluent derives its schema)."""
        if self.message is None:
            return derived_message(schema, self.prefix + MESSAGE_CLASS_NAME.name)
        return self.message.descriptor

    def decoder(self, schema: pa.Schema) -> Decoder:
        reader = _when_first_asked(self.reader_messages)  # fetched when first needed, or primed on the driver
        return ProtobufConfluentDecoder(self.registry, schema, self.read_defaults, reader, self.read_subjects())

    def prime_reader(self, schema: pa.Schema) -> None:
        self.reader_messages()

    def reader_messages(self) -> Callable[[Descriptor], Descriptor | None]:
        """A record's message type -> the version of it the columns are fields of, whichever version wrote the
        record: the message type given (for records of its full name), else the message of that full name in the
        subjects' latest schema; None: the record's own (no subject has a version yet, or its type is not there).
        The subjects of a topic list must hold one latest schema."""
        if self.message is not None:
            given = self.message.descriptor
            return lambda writer: given if writer.full_name == given.full_name else None
        latest = self.reader_view(self._latest_found)
        if not latest:
            return lambda writer: None
        texts = {s: found[1:] for s, found in latest.items()}
        given_by = f"'{self.prefix}{MESSAGE_CLASS_NAME.name}'"
        schema_id, text, refs = latest[self.agreed_subject(texts, "different latest schemas", given_by)]
        pool = _writer_descriptor(schema_id, text, refs, [0]).file.pool

        def reader(writer: Descriptor) -> Descriptor | None:
            try:
                return pool.FindMessageTypeByName(writer.full_name)
            except KeyError:
                return None

        return reader

    def _latest_found(self, subject: str) -> tuple[int, str, dict[str, str]]:
        """The subject's latest schema: its id, its text and its references' texts (base64 FileDescriptorProtos)."""
        return serialized_schema(partial(self.registry.latest_text, subject, "PROTOBUF"), f"subject '{subject}'")

    def check_writable(self, schema: pa.Schema) -> None:
        descriptor = self._writer_type(schema)
        row_writer(descriptor, schema, self.null_literal)
        versions: dict[str, int] = {}
        for name, text, imports in files_to_register(descriptor.file):
            if any(i not in versions for i in imports):
                return  # it imports a file the registry does not hold yet (registered on write): nothing to check
            refs = [(i, i, versions[i]) for i in imports]
            main = name == descriptor.file.name
            for subject in self.subjects() if main else (name,):  # an imported file: under its own subject
                if main and self._equal_id(subject, text, refs) is not None:
                    continue  # held already, as the same file in another text
                refused = self.registry.refusal(subject, text, self.auto_register, "PROTOBUF", refs, imported=not main)
                if refused is not None:
                    raise FormatOptionError(refused)
            if not main:
                held = self.registry.held_version(name, text, "PROTOBUF", refs)
                if held is None:
                    return
                versions[name] = held

    def encoder(self, schema: pa.Schema) -> Encoder:
        descriptor = self._writer_type(schema)
        fill = row_writer(descriptor, schema, self.null_literal)
        references: dict[str, tuple[str, str, int]] = {}  # (reference name, subject, version) by file name
        ids: dict[str, int] = {}
        for name, text, imports in files_to_register(descriptor.file):
            refs = [references[i] for i in imports]
            if name != descriptor.file.name:  # as confluent-kafka's serializer: registered, then its version looked up
                self.registry.schema_id(name, text, self.auto_register, "PROTOBUF", refs, imported=True)
                references[name] = (name, name, self.registry.version(name, text, "PROTOBUF", refs))
                continue
            for subject in self.subjects():
                held = self._equal_id(subject, text, refs)
                ids[subject] = (
                    held
                    if held is not None
                    else self.registry.schema_id(subject, text, self.auto_register, "PROTOBUF", refs)
                )
        framing = header(self.one_schema_id(ids, "the message type")) + message_indexes(descriptor)
        return ProtobufEncoder(message_class(descriptor), fill, framing)

    def _equal_id(self, subject: str, text: str, refs: list[tuple[str, str, int]]) -> int | None:
        """The id of the message's file under `subject`, held as this text or as the same file in another (as
        Confluent's serializer registered it from a generated module, with other json_names)."""
        return self.registry.equal_id(subject, text, "PROTOBUF", refs, partial(same_file, text))

    def inferred_schema(self) -> pa.Schema | None:
        """The given message type's columns, else the first message of the subjects' latest schema (they must
        agree)."""
        if self.message is not None:
            return arrow_schema(self.message.descriptor)
        return self.agreed_columns(self._latest_columns, f"'{self.prefix}{MESSAGE_CLASS_NAME.name}'")

    def _latest_columns(self, subject: str) -> pa.Schema:
        """The columns of the first message of the subject's latest schema."""
        return arrow_schema(_writer_descriptor(*self._latest_found(subject), [0]))


def message_indexes(descriptor: Descriptor) -> bytes:
    """The wire format's message indexes of a message type: its path from the file's top-level messages."""
    path: list[int] = []
    current: Descriptor | None = descriptor
    while current is not None:
        parent = current.containing_type
        siblings = parent.nested_types if parent is not None else list(current.file.message_types_by_name.values())
        path.append(next(i for i, s in enumerate(siblings) if s.full_name == current.full_name))
        current = parent
    path.reverse()
    if path == [0]:
        return b"\x00"
    return b"".join(_zigzag(v) for v in (len(path), *path))


def _zigzag(v: int) -> bytes:
    v = (v << 1) ^ (v >> 63)
    out = bytearray()
    while v > 0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """A zigzag varint at `pos`: its value and the position after it (IndexError past the end)."""
    shift = raw = 0
    while True:
        b = data[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if not b & 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7
        if shift > 63:
            raise ValueError("a varint longer than 10 bytes")


def split_record(payload: bytes) -> tuple[int, tuple[int, ...], int]:
    """(schema id, message indexes, where the message starts); ValueError when not in the wire format."""
    if len(payload) <= HEADER or payload[0] != MAGIC:
        raise ValueError(NOT_FRAMED)
    try:
        count, pos = _varint(payload, HEADER)
        if count == 0:
            return int.from_bytes(payload[1:HEADER], "big"), (0,), pos
        if not 0 < count <= 64:
            raise ValueError
        indexes = []
        for _ in range(count):
            index, pos = _varint(payload, pos)
            indexes.append(index)
    except (IndexError, ValueError):
        raise ValueError(NOT_FRAMED + ": its message indexes cannot be read") from None
    return int.from_bytes(payload[1:HEADER], "big"), tuple(indexes), pos


#: A schema as the registry gives it: schema_text's (text, references' texts) or latest_text's (id, text, references).
_Found = TypeVar("_Found", tuple[str, dict[str, str]], tuple[int, str, dict[str, str]])


def serialized_schema(fetch: Callable[[str | None], _Found], what: str) -> _Found:
    """A schema as `fetch(fmt)` returns it (its text and its references' texts last), the texts base64
    FileDescriptorProtos. A registry may hold a Protobuf schema as .proto source text: Confluent's converts it
    when asked with format `serialized`; Apicurio keeps each schema as it was registered (confluent-kafka's
    Python serializer registers serialized descriptors) and answers `serialized` with HTTP 500, so the plain
    answer is tried first."""
    found: _Found = fetch(None)
    if all(serialized_bytes(t) is not None for t in (found[-2], *found[-1].values())):
        return found
    try:
        found = fetch("serialized")
    except SchemaNotUsable:
        raise
    except RegistryError as e:
        raise SchemaNotUsable(
            f"{what} is .proto source text, which this format does not compile, and the registry does not serve it "
            f"serialized ({e}); register Protobuf schemas as serialized descriptors, as confluent-kafka's Python "
            "ProtobufSerializer does"
        ) from None
    return found


def _file_proto(text: str, name: str, what: str) -> descriptor_pb2.FileDescriptorProto:
    data = serialized_bytes(text)
    if data is None:
        raise SchemaNotUsable(
            f"{what} is .proto source text, which this format does not compile: it reads Protobuf schemas as "
            "serialized descriptors (what Confluent's registry returns for format=serialized, and what "
            "confluent-kafka's Python serializer registers)"
        )
    proto = descriptor_pb2.FileDescriptorProto.FromString(data)
    if name:
        proto.name = name
    return proto


def _writer_descriptor(schema_id: int, text: str, refs: Mapping[str, str], indexes: Sequence[int]) -> Descriptor:
    """The message type a record names: its schema's file (and the files it imports), then the indexes' path."""
    what = f"schema id {schema_id}"
    files = [_file_proto(t, name, f"{what}'s reference '{name}'") for name, t in refs.items()]
    main = _file_proto(text, "", what)
    main.name = main.name or f"schema-{schema_id}.proto"
    try:
        pool = pool_of([*files, main])
        file = pool.FindFileByName(main.name)
    except (TypeError, KeyError, FormatOptionError) as e:
        raise SchemaNotUsable(f"{what} cannot be loaded as a Protobuf file: {e}") from None
    candidates = list(file.message_types_by_name.values())
    descriptor = None
    for index in indexes:
        if not 0 <= index < len(candidates):
            raise SchemaNotUsable(f"{what} has no message at the record's message indexes {list(indexes)}")
        descriptor = candidates[index]
        candidates = list(descriptor.nested_types)
    if descriptor is None:  # no indexes (split_record always gives one)
        raise SchemaNotUsable(f"{what}: the record names no message (no message indexes)")
    return descriptor


Groups = dict[tuple[int, tuple[int, ...]], tuple[list[int], list[int]]]
#: A message type's parser (payload -> message) and reader (messages -> columns).
_Reader = tuple[Callable[[bytes], Message], MessagesReader]


def _framing(payloads: Sequence[bytes]) -> tuple[Groups, list[tuple[int, str]]]:
    """The records grouped by (schema id, message indexes): (payload indexes, where each message starts); and the
    records not in the wire format (index, why). The common record, the file's first message (the
    single index byte 0), is found column-wise; the others are split one by one."""
    layout = Layout.of(payloads)
    framed, ids = framed_ids(layout)
    first = framed & (layout.ends - layout.begins > HEADER) & (layout.data[layout.begins + HEADER] == 0)
    groups: Groups = {}
    failures: list[tuple[int, str]] = []
    for schema_id in np.unique(ids[first]).tolist():
        where = np.flatnonzero(first & (ids == schema_id)).tolist()
        groups[(schema_id, (0,))] = (where, [HEADER + 1] * len(where))
    for i in np.flatnonzero(~first).tolist():
        try:
            schema_id, indexes, start = split_record(payloads[i])
        except ValueError as e:
            failures.append((i, str(e)))
            continue
        where, starts = groups.setdefault((schema_id, indexes), ([], []))
        where.append(i)
        starts.append(start)
    return groups, failures


class ProtobufConfluentDecoder(Decoder):
    def __init__(
        self,
        registry: SchemaRegistry,
        schema: pa.Schema,
        read_defaults: bool,
        reader: Callable[[Descriptor], Descriptor | None] = lambda writer: None,
        subjects: tuple[str, ...] = (),
    ) -> None:
        self.registry, self.schema, self.read_defaults = registry, schema, read_defaults
        self.reader = reader  # a record's message type -> the columns' version of it (reader_messages)
        self.subjects = subjects  # the table's, named in errors
        self.schemas: dict[int, tuple[str, dict[str, str]]] = {}
        # Per (schema id, message indexes): (parse, read), or why no record naming them can be read.
        self.readers: dict[tuple[int, tuple[int, ...]], _Reader | str] = {}

    def decode(self, payloads: Sequence[bytes]) -> Decoded:
        groups, failures = _framing(payloads)
        batches, placed = [], []
        for key, (where, starts) in groups.items():
            reader = self.readers.get(key)
            if reader is None:
                reader = self.readers[key] = self._reader(*key)
            if isinstance(reader, str):
                failures.extend((i, reader) for i in where)
                continue
            parse, read = reader
            messages, parsed = parse_all(parse, payloads, where, starts, failures)
            batches.append(messages_to_batch(messages, parsed, read, self.schema, failures))
            placed.append(parsed)
        failures.sort()
        failed = {i for i, _ in failures}
        kept = [i for parsed in placed for i in parsed if i not in failed]
        if len(batches) == 1 and kept == sorted(kept):
            return Decoded(batches[0], tuple(failures))
        if not batches:
            return Decoded(empty_batch(self.schema), tuple(failures))
        # Records of several message types (or message indexes spelled two ways): their rows back in payload order.
        order = pa.array(sorted(range(len(kept)), key=kept.__getitem__), pa.int64())
        table = pa.Table.from_batches(batches, self.schema).take(order).combine_chunks()
        return Decoded(pa.RecordBatch.from_struct_array(table.to_struct_array().combine_chunks()), tuple(failures))

    def _reader(self, schema_id: int, indexes: tuple[int, ...]) -> _Reader | str:
        """The parser and row reader of records naming this schema id and message, or why none can be read. A
        registry that cannot be reached or refuses us fails the task (RegistryError): that is no record's fault."""
        try:
            found = self.schemas.get(schema_id)
            if found is None:
                fetch = partial(self.registry.schema_text, schema_id, "PROTOBUF")
                found = self.schemas[schema_id] = serialized_schema(fetch, f"schema id {schema_id}")
            descriptor = _writer_descriptor(schema_id, *found, indexes)
        except SchemaNotUsable as e:
            return f"the record's writer schema (id {schema_id}) cannot be had: {e}"
        try:
            read = messages_reader(descriptor, self.schema, self.read_defaults, self.reader(descriptor))
        except FormatOptionError as e:
            named = self.registry.writer_named(schema_id, self.subjects)
            return (
                f"the record's {named}, message '{descriptor.full_name}', cannot be read into the table's columns: {e}"
            )
        return message_class(descriptor).FromString, read


def _when_first_asked(
    make: Callable[[], Callable[[Descriptor], Descriptor | None]],
) -> Callable[[Descriptor], Descriptor | None]:
    """The reader `make` gives, made when it is first asked (a decoder built to check the options reads nothing)."""
    made: list[Callable[[Descriptor], Descriptor | None]] = []

    def reader(writer: Descriptor) -> Descriptor | None:
        if not made:
            made.append(make())
        return made[0](writer)

    return reader
