"""debezium-json: Debezium's change events as Kafka Connect's JsonConverter writes them, as Flink reads and
writes them.

An event is `{"before": row, "after": row, "source": {...}, "op": "c", "ts_ms": ..., "transaction": ...}`, or
with `value.converter.schemas.enable` the same under `payload` next to a Kafka Connect `schema`
(`debezium-json.schema-include`). op `c` (create) and `r` (snapshot read) give an insert of `after`; `u` an
update: the pre-image `before` (when the source sends it; PostgreSQL only with REPLICA IDENTITY FULL) and the
post-image `after`; `d` a delete of `before`. Written like Flink's serializer: `{"before":null,"after":row,
"op":"c"}` for an insert or update, `{"before":row,"after":null,"op":"d"}` for a delete; no schema.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from ...kernel.change_kind import ChangeKind
from ...kernel.option_kinds import FORMAT, Flag, Option
from ..codec import (
    ChangelogDecoder,
    ChangelogEncoder,
    CodecContext,
)
from .columns import TIMESTAMP_MS, epoch_millis, equal_to, millis_to_timestamp, struct_fields, text
from .envelope import Changes, EnvelopeCodec, EnvelopeDecoder, Envelopes, Slot, image_slots

_SOURCE = pa.struct(
    [
        ("ts_ms", pa.int64()),
        ("db", pa.string()),
        ("schema", pa.string()),
        ("table", pa.string()),
        ("collection", pa.string()),
    ]
)
_REPLICA_IDENTITY = "for PostgreSQL, set the table's REPLICA IDENTITY (e.g. FULL) so that its events carry it"


SCHEMA_INCLUDE = Option(
    "schema-include",
    "false",
    FORMAT,
    'The messages are `{"schema": ..., "payload": ...}` (Kafka Connect\'s `value.converter.schemas.enable`); '
    "read only: writes carry no schema (as Flink's).",
    kind=Flag(),
)


class DebeziumJsonCodec(EnvelopeCodec):
    name = "debezium-json"
    declared_options = (*EnvelopeCodec.declared_options, SCHEMA_INCLUDE)
    readable_metadata = {
        "schema": pa.string(),
        "ingestion-timestamp": TIMESTAMP_MS,
        "source.timestamp": TIMESTAMP_MS,
        "source.database": pa.string(),
        "source.schema": pa.string(),
        "source.table": pa.string(),
        "source.properties": pa.map_(pa.string(), pa.string()),
    }

    def __init__(self, options: Mapping[str, str], context: CodecContext) -> None:
        super().__init__(options, context)
        self.schema_include = self.option_values.value(SCHEMA_INCLUDE)

    def changelog_decoder(self, schema: pa.Schema, metadata: Sequence[str] = ()) -> ChangelogDecoder:
        return DebeziumDecoder(self, schema, metadata)

    def encoder(self, schema: pa.Schema) -> ChangelogEncoder:
        if self.rows.ignore_null_fields:  # Flink leaves the null image out of the envelope too
            return self.envelope_encoder(schema, (b'{"after":', b',"op":"c"}'), (b'{"before":', b',"op":"d"}'))
        return self.envelope_encoder(
            schema, (b'{"before":null,"after":', b',"op":"c"}'), (b'{"before":', b',"after":null,"op":"d"}')
        )


class DebeziumDecoder(EnvelopeDecoder):
    slow_metadata = frozenset({"schema", "source.properties"})
    codec: DebeziumJsonCodec

    def envelope_schemas(self) -> list[pa.Schema]:
        image = self.relaxed_image()
        fields = [("before", image), ("after", image), ("op", pa.string())]
        if "ingestion-timestamp" in self.metadata:
            fields.append(("ts_ms", pa.int64()))
        if any(k.startswith("source.") for k in self.metadata):
            fields.append(("source", _SOURCE))
        return [pa.schema([("payload", pa.struct(fields))]) if self.codec.schema_include else pa.schema(fields)]

    def envelopes(self, batch: pa.RecordBatch) -> Envelopes:
        event = struct_fields(batch.column("payload") if self.codec.schema_include else batch)
        slots, bad = debezium_slots(event["before"], event["after"], event["op"])
        return Envelopes(slots, bad, self._metadata(event))

    def _metadata(self, event: dict[str, pa.Array]) -> dict[str, pa.Array]:
        out = {}
        if "ingestion-timestamp" in self.metadata:
            out["ingestion-timestamp"] = millis_to_timestamp(event["ts_ms"])
        if "source" in event:
            source = struct_fields(event["source"])
            out["source.timestamp"] = millis_to_timestamp(source["ts_ms"])
            out["source.database"] = source["db"]
            out["source.schema"] = source["schema"]
            out["source.table"] = pc.coalesce(source["table"], source["collection"])
        return out

    def changes_of(self, envelope: dict[str, Any]) -> tuple[Changes, dict[str, Any]]:
        event = envelope
        if self.codec.schema_include:
            payload = envelope.get("payload")
            if not isinstance(payload, dict):
                raise ValueError(
                    "no 'payload' object: the message is not a {schema, payload} envelope; set "
                    f"'{self.codec.prefix}{SCHEMA_INCLUDE.name}' to false for events without their schema"
                )
            event = payload
        elif "payload" in envelope and "op" not in envelope:
            raise ValueError(
                f"the message is a {{schema, payload}} envelope: set '{self.codec.prefix}{SCHEMA_INCLUDE.name}' to true"
            )
        rows = debezium_rows(event.get("op"), event.get("before"), event.get("after"))
        return rows, {k: self._metadata_value(k, envelope, event) for k in self.metadata}

    def _metadata_value(self, key: str, envelope: dict[str, Any], event: dict[str, Any]) -> Any:
        if key == "schema":
            schema = envelope.get("schema") if self.codec.schema_include else None
            return None if schema is None else orjson.dumps(schema).decode()
        if key == "ingestion-timestamp":
            return epoch_millis(event.get("ts_ms"), "ts_ms")
        source = event.get("source")
        if source is None:
            return None
        if not isinstance(source, dict):
            raise ValueError("'source' is not an object")
        if key == "source.properties":
            return [(k, text(v)) for k, v in source.items()]
        if key == "source.timestamp":
            return epoch_millis(source.get("ts_ms"), "source.ts_ms")
        if key == "source.table":
            table = source.get("table")
            return text(source.get("collection") if table is None else table)
        return text(source.get({"source.database": "db", "source.schema": "schema"}[key]))


def debezium_slots(before: pa.Array, after: pa.Array, op: pa.Array) -> tuple[list[Slot], pa.BooleanArray]:
    """The rows Debezium events give (the fast path, for debezium-json and debezium-avro-confluent), and the events
    that give none as their op says (debezium_rows names why)."""
    created = pc.fill_null(pc.is_in(op, value_set=pa.array(["c", "r"])), False)
    return image_slots(before, after, created, equal_to(op, "u"), equal_to(op, "d"))


def debezium_rows(op: object, before: object, after: object) -> Changes:
    """The rows (kind, image) of one Debezium event; raises ValueError saying why it gives none."""
    if op in ("c", "r", "u") and after is None:
        raise ValueError(f"an event with op '{op}' has no 'after' row")
    if op in ("c", "r"):
        return [(ChangeKind.INSERT, after)]
    if op == "u":
        return ([] if before is None else [(ChangeKind.UPDATE_BEFORE, before)]) + [(ChangeKind.UPDATE_AFTER, after)]
    if op == "d":
        if before is None:
            raise ValueError(f"an event with op 'd' has no 'before' row to name the deleted key; {_REPLICA_IDENTITY}")
        return [(ChangeKind.DELETE, before)]
    if op == "t":
        raise ValueError("a truncate event (op 't') empties the whole table: it is not a change of keys")
    raise ValueError(f"unknown op {orjson.dumps(op).decode()}; Debezium's are c, r, u, d")
