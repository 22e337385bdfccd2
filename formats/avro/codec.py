"""Avro binary without a container or header (fastavro's schemaless encoding), as Flink's `avro` format.

The schema is derived from the table's columns (record name `record-name`, default `record`) or given
with option `schema`; records are read with that schema as the writer's and resolved to the table's
columns. Decoding reads a chunk's records column-wise into Arrow when the schemas allow it
(vector.py), else one after the other from one buffer into dicts with fastavro, converted to
Arrow in one call; encoding goes the other way (Arrow rows -> dicts -> fastavro into one buffer).
"""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pyarrow as pa
from fastavro import parse_schema, schemaless_reader, schemaless_writer

from ...kernel.errors import FormatOptionError
from ...kernel.option_kinds import FORMAT, Flag, Invalid, Kind, Option, Text
from ..codec import (
    IGNORE_PARSE_ERRORS,
    Codec,
    CodecContext,
    Decoded,
    Decoder,
    Encoder,
    batch_from_records,
    nested_type_has,
)
from ..confluent.registry_errors import RegistryError
from ..decimals import rounded_values
from ..flink_types import flink_type_name
from ..payloads import Layout
from .resolution import reader_schema, with_defaults
from .schema import (
    AVRO_TYPES,
    AvroDict,
    AvroType,
    arrow_schema,
    avro_schema,
    table_avro_schema,
    timestamp_logical_type,
)
from .vector import VectorReader

#: Flink's avro.timestamp_mapping.legacy, for both avro formats (schema.py's module docstring).
TIMESTAMP_MAPPING_LEGACY = Option(
    "timestamp_mapping.legacy",
    "true",
    FORMAT,
    "Flink's avro.timestamp_mapping.legacy for a derived schema: `true` (Flink's default) writes a TIMESTAMP(0..3) "
    "as `timestamp-millis` (the wall clock as if in UTC), and TIMESTAMP(4..6) / TIMESTAMP_LTZ(p), which Flink refuses "
    "there, as `local-timestamp-micros` / `timestamp-millis` or `-micros`; `false` writes a TIMESTAMP(0..3) as "
    "`local-timestamp-millis`, a TIMESTAMP_LTZ(0..3) as `timestamp-millis`, and refuses precisions 4 to 6 (Flink "
    "writes milliseconds in the micros it declares there).",
    kind=Flag(),
)


class AvroSchema(Kind[AvroType]):
    """An Avro schema as JSON text, checked when the option is parsed so that a typo fails at planning; blank: none."""

    type_name = "Avro schema (JSON)"

    def parse(self, raw: str) -> AvroType | None:
        if not raw.strip():
            return None
        try:
            schema = json.loads(raw)
            parse_schema(schema)
        except Exception as e:  # json or fastavro's schema errors, of several types
            raise Invalid(f"is not a valid Avro schema: {e}") from None
        return schema


SCHEMA: Option[AvroType | None] = Option(
    "schema",
    None,
    FORMAT,
    "The Avro schema records are written and read with, JSON text (default: derived from the columns).",
    kind=AvroSchema(),
)
#: Both avro formats' (avro-confluent's namespace has another default: confluent_codec.py).
RECORD_NAME = Option("record-name", "record", FORMAT, "The record name of a derived schema.", kind=Text())
RECORD_NAMESPACE: Option[str | None] = Option(
    "record-namespace", None, FORMAT, "The namespace of a derived schema (none by default).", kind=Text()
)


class AvroCodec(Codec):
    name = "avro"
    declared_options = (SCHEMA, RECORD_NAME, RECORD_NAMESPACE, TIMESTAMP_MAPPING_LEGACY, IGNORE_PARSE_ERRORS)
    column_types = AVRO_TYPES

    def __init__(self, options: Mapping[str, str], context: CodecContext) -> None:
        super().__init__(options, context)
        values = self.option_values
        self.record_name = values.value(RECORD_NAME).strip()
        self.record_namespace = (values.value(RECORD_NAMESPACE) or "").strip() or None
        self.given_schema = values.value(SCHEMA)
        self.legacy_timestamps = values.value(TIMESTAMP_MAPPING_LEGACY)

    def writer_schema(self, schema: pa.Schema) -> AvroType:
        """The schema records are written with: the given one, or the table's as Flink derives it (a key's
        columns NOT NULL)."""
        return self.given_schema or table_avro_schema(
            schema, self.context.role, self.record_name, self.record_namespace, self.legacy_timestamps
        )

    def decoder(self, schema: pa.Schema) -> Decoder:
        return AvroDecoder(schema, AvroBodyReader(self.writer_schema(schema), schema, self.legacy_timestamps))

    def encoder(self, schema: pa.Schema) -> Encoder:
        derived = self.given_schema is None
        return AvroEncoder(schema, self.writer_schema(schema), derived, legacy_timestamps=self.legacy_timestamps)

    def inferred_schema(self) -> pa.Schema | None:
        return None if self.given_schema is None else arrow_schema(self.given_schema)


class AvroBodyReader:
    """Reads Avro bodies written with `writer` into the table's columns (schema resolution)."""

    def __init__(
        self, writer: AvroType, schema: pa.Schema, legacy_timestamps: bool = True, source: AvroType = None
    ) -> None:
        """`source`: the schema whose field defaults a record whose writer lacks the field reads (schema.with_defaults);
        None: null for a nullable column."""
        self.schema = schema
        self.writer = parse_schema(writer)
        derived = avro_schema(schema, legacy_timestamps=legacy_timestamps)
        if source is not None:
            derived = with_defaults(derived, schema, source)
        adopted = reader_schema(derived, writer)
        reader = parse_schema(adopted)
        # fastavro resolves even equal schemas, slower than reading with the writer's alone.
        self.reader = None if reader == self.writer else reader
        self.vector = VectorReader.build(writer, adopted, schema)

    def decode(
        self, payloads: Sequence[bytes], layout: Layout, rows: np.ndarray | None, start: int
    ) -> tuple[pa.RecordBatch, dict[int, str]]:
        """The bodies (from byte `start`) of the payloads at `rows` (None: all) as a batch of those that
        decoded, in order, and the reasons of those that did not, by index into `payloads`. Column-wise
        when the chunk allows it; else record by record with fastavro, which names each failing record."""
        if self.vector is not None:
            batch = self.vector.read(layout, rows, start)
            if batch is not None:
                return batch, {}
        part = payloads if rows is None else [payloads[i] for i in rows]
        records: list[dict[str, object] | None] = [None] * len(part)
        failures: dict[int, str] = {}
        self.read_all(part, start, records, failures)
        decoded = records_to_batch(records, failures, self.schema)
        if rows is None:
            return decoded.batch, dict(decoded.failures)
        return decoded.batch, {int(rows[j]): reason for j, reason in decoded.failures}

    def read_all(
        self, payloads: Sequence[bytes], start: int, records: list[dict[str, object] | None], failures: dict[int, str]
    ) -> None:
        """Read the body of every payload (from byte `start`) into records[i], or its reason into failures[i].

        The payloads are read from one buffer, one after the other (fastavro's per-call setup is most of
        the cost of a small record); each record must end exactly where its payload does."""
        buffer = io.BytesIO(b"".join(payloads))
        writer, reader = self.writer, self.reader
        seek, tell = buffer.seek, buffer.tell
        end = 0
        for i, payload in enumerate(payloads):
            begin, end = end, end + len(payload)
            seek(begin + start)
            try:
                record = schemaless_reader(buffer, writer, reader)
            except (RegistryError, FormatOptionError):
                raise  # not this record's fault: the registry or the schemas
            except Exception as e:  # fastavro raises many types on malformed input
                failures[i] = _reason(e)
                continue
            position = tell()
            if position != end:
                failures[i] = (
                    f"{end - position} byte(s) left after the Avro record"
                    if position < end
                    else "malformed or truncated Avro data (the record runs past the end of its bytes)"
                )
            elif not isinstance(record, dict):
                failures[i] = f"expected an Avro record, got {type(record).__name__}"
            else:
                records[i] = record


class AvroDecoder(Decoder):
    def __init__(self, schema: pa.Schema, body: AvroBodyReader) -> None:
        self.schema = schema
        self.body = body

    def decode(self, payloads: Sequence[bytes]) -> Decoded:
        batch, failures = self.body.decode(payloads, Layout.of(payloads), None, 0)
        return Decoded(batch, tuple(sorted(failures.items())))


def records_to_batch(records: list[dict[str, object] | None], failures: dict[int, str], schema: pa.Schema) -> Decoded:
    """The records read (None where one failed) as one batch, converted to Arrow in one call; a record
    whose values do not fit the table's columns is reported by its index with the reason."""
    kept = [i for i, r in enumerate(records) if r is not None]
    good = [r for r in records if r is not None]  # every record when none failed
    try:
        batch = batch_from_records(good, schema)
    except (pa.ArrowException, ValueError, TypeError, OverflowError):
        # Some value does not fit its column (e.g. an int into TINYINT, a decimal of the writer's larger scale,
        # which is rounded to the column's): find it record by record.
        fits = []
        for i, read in zip(kept, good):
            try:
                record = {f.name: rounded_values(read.get(f.name), f.type) for f in schema}
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

    def __init__(
        self, schema: pa.Schema, writer: AvroType, derived: bool, prefix: bytes = b"", legacy_timestamps: bool = True
    ) -> None:
        self.writer = parse_schema(writer)
        self.prefix = prefix
        # With our own schema, timestamps and dates travel as their integer encoding (micros or millis, days):
        # no Python datetime per value. A given schema may want millis, so it gets datetimes.
        self.wire = _Wire(schema, legacy_timestamps) if derived else None
        # A given schema's millis (timestamp-millis, time-millis): fastavro would cut finer digits off unsaid.
        self.exact = None if derived else _millis_exact(schema, writer)
        # fastavro takes maps as dicts only; Arrow builds them several times slower than its default pairs.
        self.maps_as_pydicts = ["strict" if nested_type_has(f.type, pa.types.is_map) else None for f in schema]

    def encode(self, batch: pa.RecordBatch) -> list[bytes]:
        n = batch.num_rows  # a cast of a batch without columns loses its row count
        if self.wire is not None:
            batch = self.wire.cast(batch)
        elif self.exact is not None:
            batch = _cast_exactly(batch, self.exact, _given_millis)
        names = batch.schema.names
        # Column by column into Python values, then one dict per row: twice as fast as batch.to_pylist().
        columns = [c.to_pylist(maps_as_pydicts=m) for c, m in zip(batch.columns, self.maps_as_pydicts)]
        buffer, ends = io.BytesIO(), []
        write, tell, prefix, writer = buffer.write, buffer.tell, self.prefix, self.writer
        for values in zip(*columns) if columns else [()] * n:  # no columns: an empty record each
            write(prefix)
            schemaless_writer(buffer, writer, dict(zip(names, values)))
            ends.append(tell())
        data, start = buffer.getvalue(), 0
        out = []
        for end in ends:
            out.append(data[start:end])
            start = end
        return out


_MILLIS = ("timestamp-millis", "local-timestamp-millis", "time-millis")


def _millis_exact(schema: pa.Schema, writer: AvroType) -> pa.Schema | None:
    """The table's schema with millisecond units where the given Avro schema writes millis (at any depth), or None
    when it writes none: a cast to it fails on a value with finer digits instead of fastavro truncating it."""
    named: dict[str, AvroDict] = {}
    record = _avro_branch(writer, named)
    fields = {f["name"]: f["type"] for f in record.get("fields", ())} if isinstance(record, dict) else {}
    exact = pa.schema([f.with_type(_millis_type(f.type, fields.get(f.name), named)) for f in schema])
    return None if exact.equals(schema) else exact


def _avro_branch(avro: object, named: dict[str, AvroDict]) -> object:
    """An Avro type with a nullable union's one branch taken and a named type looked up (named ones recorded)."""
    if isinstance(avro, list):
        branches = [b for b in avro if b != "null"]
        avro = branches[0] if len(branches) == 1 else None
    if isinstance(avro, str):
        return named.get(avro, avro)
    if isinstance(avro, dict) and avro.get("type") in ("record", "enum", "fixed") and "name" in avro:
        named[avro["name"]] = avro
        if "namespace" in avro:
            named[f"{avro['namespace']}.{avro['name']}"] = avro
    return avro


def _millis_type(t: pa.DataType, avro: object, named: dict[str, AvroDict]) -> pa.DataType:
    avro = _avro_branch(avro, named)
    if not isinstance(avro, dict):
        return t
    if avro.get("logicalType") in _MILLIS:
        if pa.types.is_timestamp(t):
            return pa.timestamp("ms", t.tz)
        if pa.types.is_time(t):
            return pa.time32("ms")
    kind = avro.get("type")
    if kind == "array" and pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_millis_type(t.value_type, avro.get("items"), named)))
    if kind == "map" and pa.types.is_map(t):
        return pa.map_(t.key_field, t.item_field.with_type(_millis_type(t.item_type, avro.get("values"), named)))
    if kind == "record" and pa.types.is_struct(t):
        fields = {f["name"]: f["type"] for f in avro.get("fields", ())}
        return pa.struct([c.with_type(_millis_type(c.type, fields.get(c.name), named)) for c in t])
    return t


def _cast_exactly(batch: pa.RecordBatch, exact: pa.Schema, why: Callable[[str, Exception], str]) -> pa.RecordBatch:
    """`batch` cast column by column to `exact`'s millisecond units; a value with finer digits fails the write with
    `why(column, cause)` (a safe cast refuses to lose them)."""
    columns = list(batch.columns)
    for i, (f, g) in enumerate(zip(batch.schema, exact)):
        if f.type.equals(g.type):
            continue
        try:
            columns[i] = columns[i].cast(g.type)
        except pa.ArrowInvalid as e:
            if "would lose data" not in str(e):
                raise
            raise ValueError(why(f.name, e)) from None
    return pa.RecordBatch.from_arrays(columns, schema=exact)


def _given_millis(column: str, e: Exception) -> str:
    return (
        f"the Avro schema given writes column '{column}' in milliseconds (timestamp-millis / time-millis), and a value"
        f" has finer digits ({e}): truncate it first, e.g. F.date_trunc('millisecond', column) for a timestamp or"
        " CAST(column AS TIME(3)) for a TIME, or give a schema with timestamp-micros / time-micros"
    )


class _Wire:
    """A derived schema's integer encodings of dates, TIMEs and timestamps, cast from the table's Arrow types: micros,
    or millis for a TIME and for a timestamp of Flink precision 0 to 3, cast safely (a value with finer digits than
    its Flink type fails the write, never truncated)."""

    def __init__(self, schema: pa.Schema, legacy: bool) -> None:
        self.legacy = legacy
        self.millis: list[str] = []  # the timestamps written as millis, by Flink type, for the error
        self.exact = pa.schema([self._field(f, integers=False) for f in schema])
        self.integers = pa.schema([self._field(f, integers=True) for f in schema])

    def cast(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        if self.millis:
            batch = _cast_exactly(batch, self.exact, self._finer_than_millis)
        return batch.cast(self.integers)

    def _finer_than_millis(self, column: str, e: Exception) -> str:
        return (
            f"a timestamp or TIME has digits finer than a millisecond, which its Flink type"
            f" ({', '.join(self.millis)}) cannot hold ({e}): truncate it first, e.g."
            " F.date_trunc('millisecond', column) for a timestamp or CAST(column AS TIME(3)) for a TIME,"
            " or declare a timestamp column's precision as 6 in option 'flink.column-types' (Flink's avro"
            " holds no TIME finer than millis)"
        )

    def _field(self, f: pa.Field, integers: bool) -> pa.Field:
        # Nullable inside: Arrow casts no nullable STRUCT field to a NOT NULL one, and the Avro writer refuses a null
        # where the schema has none.
        return f.with_type(self._type(f, integers)).with_nullable(True)

    def _type(self, f: pa.Field, integers: bool) -> pa.DataType:
        t = f.type
        if pa.types.is_timestamp(t):
            if timestamp_logical_type(f, self.legacy).endswith("millis"):
                if not integers:
                    self.millis.append(f"{f.name} {flink_type_name(f)}")
                return pa.int64() if integers else pa.timestamp("ms", t.tz)
            return pa.int64() if integers else t
        if pa.types.is_time(t):  # time-millis: a value with finer digits fails the exact cast
            if not integers:
                self.millis.append(f"{f.name} TIME(3)")
            return pa.int32() if integers else pa.time32("ms")
        if pa.types.is_date32(t):
            return pa.int32() if integers else t
        if pa.types.is_list(t):
            return pa.list_(self._field(t.value_field, integers))
        if pa.types.is_map(t):
            return pa.map_(t.key_field, self._field(t.item_field, integers))
        if pa.types.is_struct(t):
            return pa.struct([self._field(c, integers) for c in t])
        return t
