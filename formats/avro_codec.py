"""Avro binary without a container or header (fastavro's schemaless encoding), as Flink's `avro` format.

The schema is derived from the table's columns (record name `record-name`, default `record`) or given
with option `schema`; records are read with that schema as the writer's and resolved to the table's
columns. Decoding reads each record into a dict with fastavro, then converts the whole batch to Arrow
in one call; encoding goes the other way (Arrow rows -> dicts -> fastavro into one buffer).
"""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Callable, Mapping, Sequence

import pyarrow as pa
from fastavro import parse_schema, schemaless_reader, schemaless_writer

from formats.avro_schema import AvroType, arrow_schema, avro_schema, reader_schema
from formats.codec import (
    Codec,
    CodecContext,
    Decoded,
    Decoder,
    Encoder,
    FormatOptionError,
    batch_from_records,
    option_flag,
)
from formats.schema_registry import RegistryError

ReadRecord = Callable[[bytes], dict]


class AvroCodec(Codec):
    name = "avro"
    option_names = frozenset({"schema", "record-name", "record-namespace", "ignore-parse-errors"})

    def __init__(self, options: Mapping[str, str], context: CodecContext) -> None:
        super().__init__(options, context)
        prefix = f"{context.role}.{self.name}."
        self.ignore_parse_errors = option_flag(options, "ignore-parse-errors", prefix)
        self.record_name = options.get("record-name", "record").strip()
        self.record_namespace = options.get("record-namespace", "").strip() or None
        self.given_schema = load_schema_option(options.get("schema"), f"{prefix}schema")

    def writer_schema(self, schema: pa.Schema) -> AvroType:
        """The schema records are written with: the given one, or the table's as Avro."""
        return self.given_schema or avro_schema(schema, self.record_name, self.record_namespace)

    def decoder(self, schema: pa.Schema) -> Decoder:
        body = AvroBodyReader(self.writer_schema(schema), schema)
        return AvroDecoder(schema, body.read)

    def encoder(self, schema: pa.Schema) -> Encoder:
        return AvroEncoder(schema, self.writer_schema(schema), derived=self.given_schema is None)

    def inferred_schema(self) -> pa.Schema | None:
        return None if self.given_schema is None else arrow_schema(self.given_schema)


def load_schema_option(text: str | None, option: str) -> AvroType | None:
    """An Avro schema given as JSON text in an option; checked here, so a typo fails at planning."""
    if text is None or not text.strip():
        return None
    try:
        schema = json.loads(text)
        parse_schema(schema)
    except Exception as e:  # json or fastavro's schema errors, of several types
        raise FormatOptionError(f"option '{option}' is not a valid Avro schema: {e}") from None
    return schema


class AvroBodyReader:
    """Reads one Avro body written with `writer` into a dict of the table's columns (schema resolution)."""

    def __init__(self, writer: AvroType, schema: pa.Schema) -> None:
        self.writer = parse_schema(writer)
        derived = avro_schema(schema)
        self.reader = parse_schema(reader_schema(derived, writer))

    def read(self, payload: bytes, start: int = 0) -> dict:
        buffer = io.BytesIO(payload)
        buffer.seek(start)
        record = schemaless_reader(buffer, self.writer, self.reader)
        if buffer.tell() != len(payload):
            raise ValueError(f"{len(payload) - buffer.tell()} byte(s) left after the Avro record")
        if not isinstance(record, dict):
            raise ValueError(f"expected an Avro record, got {type(record).__name__}")
        return record


class AvroDecoder(Decoder):
    def __init__(self, schema: pa.Schema, read: ReadRecord) -> None:
        self.schema = schema
        self.read = read

    def decode(self, payloads: Sequence[bytes]) -> Decoded:
        return decode_records(payloads, self.read, self.schema)


def decode_records(payloads: Sequence[bytes], read: ReadRecord, schema: pa.Schema) -> Decoded:
    """Read each payload into a dict, then convert them all to Arrow at once; a record that fails either
    step is reported by its index with the reason."""
    records: list[dict] = []
    kept: list[int] = []
    failures: dict[int, str] = {}
    for i, payload in enumerate(payloads):
        try:
            records.append(read(payload))
            kept.append(i)
        except (RegistryError, FormatOptionError):
            raise  # not this record's fault: the registry or the schemas
        except Exception as e:  # fastavro raises many types on malformed input
            failures[i] = _reason(e)
    try:
        batch = batch_from_records(records, schema)
    except (pa.ArrowException, ValueError, TypeError, OverflowError):
        # Some value does not fit its column (e.g. an int into TINYINT): find it record by record.
        fits = []
        for i, record in zip(kept, records):
            try:
                batch_from_records([record], schema)
                fits.append(record)
            except (pa.ArrowException, ValueError, TypeError, OverflowError) as e:
                failures[i] = f"a value does not fit the table's column types: {_reason(e)}"
        batch = batch_from_records(fits, schema)
    return Decoded(batch, tuple(sorted(failures.items())))


def _reason(e: Exception) -> str:
    text = str(e).strip()
    if isinstance(e, (EOFError, IndexError, struct.error)):
        return f"malformed or truncated Avro data ({type(e).__name__}: {text})"
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


class AvroEncoder(Encoder):
    """Encodes rows with `writer`; `prefix` (the Confluent header) is written before each record."""

    def __init__(self, schema: pa.Schema, writer: AvroType, derived: bool, prefix: bytes = b"") -> None:
        self.writer = parse_schema(writer)
        self.prefix = prefix
        # With our own schema, timestamps and dates travel as their integer encoding (micros, days):
        # no Python datetime per value. A given schema may want millis, so it gets datetimes.
        self.wire = pa.schema([f.with_type(_wire_type(f.type)) for f in schema]) if derived else None

    def encode(self, batch: pa.RecordBatch) -> list[bytes]:
        if self.wire is not None:
            batch = batch.cast(self.wire)
        rows = batch.to_pylist(maps_as_pydicts="strict")
        buffer, ends = io.BytesIO(), []
        write, prefix, writer = buffer.write, self.prefix, self.writer
        for row in rows:
            write(prefix)
            schemaless_writer(buffer, writer, row)
            ends.append(buffer.tell())
        data, out, start = buffer.getbuffer(), [], 0
        for end in ends:
            out.append(bytes(data[start:end]))
            start = end
        return out


def _wire_type(t: pa.DataType) -> pa.DataType:
    if pa.types.is_timestamp(t):
        return pa.int64()
    if pa.types.is_date32(t):
        return pa.int32()
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_wire_type(t.value_type)))
    if pa.types.is_map(t):
        return pa.map_(t.key_field, t.item_field.with_type(_wire_type(t.item_type)))
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_wire_type(f.type)) for f in t])
    return t
