"""debezium-avro-confluent: Debezium's change events as Kafka Connect's AvroConverter writes them (the Confluent
wire format through a schema registry), as Flink reads and writes them.

An event is the record `{before: [null, Value], after: [null, Value], source: {...}, op: string, ts_ms: ...}`; the
writer schema is fetched by the record's id (avro-confluent's decoder, resolved to `before`, `after` and `op` with
the table's columns as the row images), and the ops are debezium-json's (debezium.py). Written as Flink's
serializer writes it: the record `{before, after, op}` with a schema derived from the table (`before` and `after`
nullable rows), registered under `<topic>-value` (or option `subject`) as avro-confluent registers its schemas;
an insert or update is `{before: null, after: row, op: "c"}`, a delete `{before: row, after: null, op: "d"}`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from ...kernel.errors import FormatOptionError
from ..avro.codec import RECORD_NAME
from ..avro.confluent_codec import RECORD_NAMESPACE, SCHEMA, AvroConfluentCodec, ConfluentDecoder
from ..avro.schema import AVRO_TYPES
from ..codec import (
    ChangelogCodec,
    ChangelogDecoder,
    ChangelogEncoder,
    CodecContext,
    DecodedChanges,
    Encoder,
)
from .debezium import debezium_rows, debezium_slots
from .envelope import CHANGELOG_MODE, lay_out

# avro-confluent's options that mean something for an envelope (a given `schema` or record names would be the
# envelope's, which Flink derives itself).
_REGISTRY_OPTIONS = tuple(
    o for o in AvroConfluentCodec.declared_options if o not in (SCHEMA, RECORD_NAME, RECORD_NAMESPACE)
)


class DebeziumAvroConfluentCodec(ChangelogCodec):
    name = "debezium-avro-confluent"
    declared_options = (*_REGISTRY_OPTIONS, CHANGELOG_MODE)
    column_types = AVRO_TYPES

    def __init__(self, options: Mapping[str, str], context: CodecContext) -> None:
        super().__init__(options, context)
        self.full_changelog = self.option_values.value(CHANGELOG_MODE) == "all"
        registry_options = {k: v for k, v in options.items() if k.rsplit(".", 1)[-1] != CHANGELOG_MODE.name}
        self.envelopes = AvroConfluentCodec.named(self.name, registry_options, context)

    def __repr__(self) -> str:  # the options hold credentials: show only what is safe
        return f"DebeziumAvroConfluentCodec({self.context.role}, {self.envelopes.settings!r})"

    def changelog_decoder(self, schema: pa.Schema, metadata: Sequence[str] = ()) -> ChangelogDecoder:
        if metadata:
            raise FormatOptionError(f"format '{self.name}' has no metadata (as in Flink): {', '.join(metadata)}")
        return DebeziumAvroDecoder(self.envelopes, schema)

    def check_writable(self, schema: pa.Schema) -> None:
        self.envelopes.check_writable(envelope_schema(schema))

    def encoder(self, schema: pa.Schema) -> ChangelogEncoder:
        return DebeziumAvroEncoder(schema, self.envelopes.encoder(envelope_schema(schema)))


def envelope_schema(schema: pa.Schema) -> pa.Schema:
    """The envelope's columns: the row before and after (nullable rows of the table's columns) and the op."""
    image = pa.struct(list(schema))
    return pa.schema([pa.field("before", image), pa.field("after", image), pa.field("op", pa.string(), False)])


class DebeziumAvroDecoder(ChangelogDecoder):
    def __init__(self, registry: AvroConfluentCodec, schema: pa.Schema) -> None:
        self.schema = schema
        # The images as read: every column nullable (a missing image is null; the key check comes later).
        image = pa.struct([f.with_nullable(True) for f in schema])
        self.image = image
        read = pa.schema([("before", image), ("after", image), ("op", pa.string())])
        self.events = ConfluentDecoder(registry.registry, read, registry.legacy_timestamps)

    def decode_changes(self, payloads: Sequence[bytes]) -> DecodedChanges:
        decoded = self.events.decode(payloads)
        failed = dict(decoded.failures)
        # The decoded batch has a row per payload that decoded, in order: its payload index.
        index = pa.array([i for i in range(len(payloads)) if i not in failed], pa.int64())
        batch = decoded.batch
        slots, bad = debezium_slots(batch.column("before"), batch.column("after"), batch.column("op"))
        for j in pc.indices_nonzero(bad).to_pylist():  # an event whose op gives no row: say why
            event = batch.slice(j, 1).to_pylist()[0]
            try:
                debezium_rows(event["op"], event["before"], event["after"])
                failed[index[j].as_py()] = "the event gives no row"  # not reached: bad events raise
            except ValueError as e:
                failed[index[j].as_py()] = str(e)
        images, kinds, records = lay_out(slots, bad, None, self.image)
        columns = [images.field(f.name).cast(f.type) for f in self.schema]
        rows = pa.RecordBatch.from_arrays(columns, schema=self.schema) if len(self.schema) else images
        return DecodedChanges(rows, kinds, index.take(records), {}, tuple(sorted(failed.items())))


class DebeziumAvroEncoder(ChangelogEncoder):
    def __init__(self, schema: pa.Schema, envelopes: Encoder) -> None:
        self.schema, self.envelopes = schema, envelopes
        self.image = pa.struct(list(schema))

    def encode_changes(self, batch: pa.RecordBatch, deletes: pa.BooleanArray) -> list[bytes]:
        rows = pa.StructArray.from_arrays(batch.columns, fields=list(self.image))
        nulls = pa.nulls(batch.num_rows, self.image)
        before = pc.if_else(deletes, rows, nulls)
        after = pc.if_else(deletes, nulls, rows)
        op = pc.if_else(deletes, pa.scalar("d"), pa.scalar("c"))
        envelope = pa.RecordBatch.from_arrays([before, after, op], schema=envelope_schema(self.schema))
        return self.envelopes.encode(envelope)
