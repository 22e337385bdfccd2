"""Avro in the Confluent wire format (magic byte 0, 4-byte big-endian schema id, Avro body), with a Schema
Registry, as Flink's `avro-confluent` format: what Confluent's KafkaAvroSerializer writes and its
KafkaAvroDeserializer reads.

Writing registers (or, with auto.register.schemas=false, looks up) the table's schema, or the one given
with option `schema`, under the subject `<topic>-key` / `<topic>-value` of every topic written (or option
`subject`; required with `topic-pattern`). Reading fetches each record's writer schema by its id and
resolves it to the table's columns. Ids and schemas are cached per process (per executor).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from functools import partial

import numpy as np
import pyarrow as pa

from ...kernel.errors import FormatOptionError
from ...kernel.option_kinds import FORMAT, Option, Text
from ..codec import IGNORE_PARSE_ERRORS, CodecContext, Decoded, Decoder, Encoder, empty_batch
from ..confluent.registry import SchemaRegistry
from ..confluent.registry_codec import REGISTRY_OPTIONS, RegistryCodec
from ..confluent.registry_errors import RegistryError, SchemaNotUsable
from ..confluent.wire import HEADER, framed_ids, header, not_framed
from ..payloads import Layout
from .codec import RECORD_NAME, TIMESTAMP_MAPPING_LEGACY, AvroBodyReader, AvroEncoder, AvroSchema
from .resolution import MissingWithoutDefault, with_defaults
from .schema import AVRO_TYPES, AvroType, arrow_schema, avro_schema, table_avro_schema

NOT_FRAMED = not_framed("the Avro body")
# Flink's name for a schema derived from a table, so both write compatible versions of one subject.
FLINK_NAMESPACE = "org.apache.flink.avro.generated"

# avro's options as avro-confluent declares them (record-name is avro's own).
SCHEMA: Option[AvroType | None] = Option(
    "schema", None, FORMAT, "The Avro schema to write (default: derived from the columns).", kind=AvroSchema()
)
RECORD_NAMESPACE = Option(
    "record-namespace", FLINK_NAMESPACE, FORMAT, "The namespace of a derived schema.", kind=Text()
)


class AvroConfluentCodec(RegistryCodec):
    name = "avro-confluent"
    declared_options = (
        *REGISTRY_OPTIONS[:2],
        SCHEMA,
        *REGISTRY_OPTIONS[2:],
        RECORD_NAME,
        RECORD_NAMESPACE,
        TIMESTAMP_MAPPING_LEGACY,
        IGNORE_PARSE_ERRORS,
    )
    column_types = AVRO_TYPES

    def __init__(self, options: Mapping[str, str], context: CodecContext) -> None:
        super().__init__(options, context)
        values = self.option_values
        self.given_schema = values.value(SCHEMA)
        self.record_name = values.value(RECORD_NAME).strip()
        self.record_namespace = values.value(RECORD_NAMESPACE).strip() or None
        self.legacy_timestamps = values.value(TIMESTAMP_MAPPING_LEGACY)

    def decoder(self, schema: pa.Schema) -> Decoder:
        source = partial(self.reader_source, schema)  # fetched when first needed, or primed on the driver
        return ConfluentDecoder(self.registry, schema, self.legacy_timestamps, source, self.read_subjects())

    def prime_reader(self, schema: pa.Schema) -> None:
        """The reader's view fetched (reader_source), and a NOT NULL column without a default that a registered
        writer version lacks refused before any task, naming them: none of that version's records could be read.
        A version registered after the query started fails its records as they come (ConfluentDecoder)."""
        source = self.reader_source(schema)
        subjects = self.read_subjects()
        lacking = []
        for subject in subjects:
            for version, schema_id in self.registry.versions(subject):
                try:
                    writer = self.registry.schema(schema_id)
                    AvroBodyReader(writer, schema, self.legacy_timestamps, source)
                except MissingWithoutDefault as e:
                    lacking.append((e, f"schema id {schema_id} (subject '{subject}' version {version})"))
                except SchemaNotUsable:
                    continue
                except RegistryError:
                    raise
                except Exception:  # fastavro's schema errors are of several types
                    continue  # such a writer's records fail as they come, naming why (ConfluentDecoder._reader)
        if lacking:
            missing = lacking[0][0]
            raise FormatOptionError(
                f"the table reads '{missing.field}' (a field of record '{missing.record}') NOT NULL without a default, "
                f"which the registered writer {' and '.join(w for _, w in lacking)} lacks, so none of its records "
                "could be read: give the column as nullable (option 'schema' or the DataFrame's .schema(...)), or "
                "register a version whose field has a default (the reader's defaults are the subject's latest's)"
            )

    def reader_source(self, schema: pa.Schema) -> AvroType | None:
        """The schema whose field defaults a record whose writer lacks a field reads (Confluent's deserializer reads
        with the subject's latest): option `schema`, else the subjects' latest (None: no subject has a version yet).
        The subjects of a topic list must agree on the defaults of the table's columns."""
        if self.given_schema is not None:
            return self.given_schema
        latest = self.reader_view(self._latest)
        if not latest:
            return None
        derived = avro_schema(schema, legacy_timestamps=self.legacy_timestamps)
        readers = {subject: with_defaults(derived, schema, source) for subject, source in latest.items()}
        return latest[self.agreed_subject(readers, "different defaults of the table's columns", "option 'schema'")]

    def _latest(self, subject: str) -> AvroType:
        return self.registry.latest(subject)[1]

    def writer_schema(self, schema: pa.Schema) -> AvroType:
        """The schema records are written with: option `schema`, else the table's as Flink derives it (a key's
        columns NOT NULL), so a key subject holds the schema Flink's and Confluent's producers register."""
        return self.given_schema or table_avro_schema(
            schema, self.context.role, self.record_name, self.record_namespace, self.legacy_timestamps
        )

    def check_writable(self, schema: pa.Schema) -> None:
        self.check_registrable(self.writer_schema(schema), "AVRO")

    def encoder(self, schema: pa.Schema) -> Encoder:
        writer = self.writer_schema(schema)
        ids = {s: self.registry.schema_id(s, writer, register=self.auto_register) for s in self.subjects()}
        schema_id = self.one_schema_id(ids, "the table's schema")
        return AvroEncoder(schema, writer, self.given_schema is None, header(schema_id), self.legacy_timestamps)

    def inferred_schema(self) -> pa.Schema | None:
        """The subjects' latest registered schema as columns (the table's schema when none is given); the
        subjects of a topic list must agree on it."""
        if self.given_schema is not None:
            return arrow_schema(self.given_schema)
        return self.agreed_columns(lambda subject: arrow_schema(self.registry.latest(subject)[1]), "option 'schema'")


class ConfluentDecoder(Decoder):
    def __init__(
        self,
        registry: SchemaRegistry,
        schema: pa.Schema,
        legacy_timestamps: bool = True,
        source: Callable[[], AvroType] | None = None,
        subjects: tuple[str, ...] = (),
    ) -> None:
        self.registry = registry
        self.subjects = subjects  # the table's, named in errors
        self.schema = schema
        self.legacy_timestamps = legacy_timestamps
        self._source = source  # the schema whose defaults fill what a writer lacks (reader_source), when first read
        # Per schema id: its reader, or why no record with that id can be read (asked once per task).
        self.readers: dict[int, AvroBodyReader | str] = {}

    def decode(self, payloads: Sequence[bytes]) -> Decoded:
        layout = Layout.of(payloads)
        framed, ids = framed_ids(layout)
        failures = dict.fromkeys(np.flatnonzero(~framed).tolist(), NOT_FRAMED)
        parts: list[tuple[np.ndarray | None, pa.RecordBatch]] = []
        if not failures and len(payloads) and (ids == ids[0]).all():
            groups: list[tuple[int, np.ndarray | None]] = [(int(ids[0]), None)]  # the usual: one id, all rows
        else:
            groups = [(int(i), np.flatnonzero(framed & (ids == i))) for i in np.unique(ids[framed])]
        for schema_id, rows in groups:
            reader = self.readers.get(schema_id)
            if reader is None:
                reader = self.readers[schema_id] = self._reader(schema_id)
            if isinstance(reader, str):
                failures.update(dict.fromkeys(rows.tolist() if rows is not None else range(len(payloads)), reader))
                continue
            batch, failed = reader.decode(payloads, layout, rows, HEADER)
            failures.update(failed)
            if rows is not None and failed:
                rows = rows[~np.isin(rows, list(failed))]
            parts.append((rows, batch))
        return Decoded(_in_order(parts, self.schema), tuple(sorted(failures.items())))

    def _reader(self, schema_id: int) -> AvroBodyReader | str:
        """The reader of records written with this schema id, or the reason none can be read. A registry that
        cannot be reached or refuses us fails the task (RegistryError): that is no record's fault."""
        try:
            writer = self.registry.schema(schema_id)
        except SchemaNotUsable as e:
            return f"the record's writer schema (id {schema_id}) cannot be had: {e}"
        try:
            return AvroBodyReader(writer, self.schema, self.legacy_timestamps, self.source)
        except RegistryError:
            raise
        except Exception as e:  # fastavro's schema errors are of several types
            named = self.registry.writer_named(schema_id, self.subjects)
            return f"the record's {named} cannot be read into the table's columns: {e}"

    @functools.cached_property
    def source(self) -> AvroType:
        """The schema whose defaults fill what a writer lacks: fetched when first needed (primed on the driver)."""
        return None if self._source is None else self._source()


def _in_order(parts: list[tuple[np.ndarray | None, pa.RecordBatch]], schema: pa.Schema) -> pa.RecordBatch:
    """The batches decoded per schema id as one, its rows in the payloads' order (`rows`: the payload index of
    each batch row; None: the batch is every payload, in order)."""
    if len(parts) == 1 and parts[0][0] is None:
        return parts[0][1]
    if not parts:
        return empty_batch(schema)
    if len(parts) == 1:
        return parts[0][1]  # one id's rows, already in order
    order = np.argsort(np.concatenate([rows for rows, _ in parts]), kind="stable")
    table = pa.Table.from_batches([batch for _, batch in parts], schema=schema).take(order)
    return table.combine_chunks().to_batches()[0] if table.num_rows else empty_batch(schema)
