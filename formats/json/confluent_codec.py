"""JSON Schema in the Confluent wire format (magic byte 0, 4-byte big-endian schema id, the JSON text), with a Schema
Registry: what confluent-kafka's JSONSerializer writes and its JSONDeserializer reads (Confluent Cloud's Flink
calls it `json-registry`; named here as Flink names avro-confluent).

Reading checks each record's header and that the registry holds a JSON schema under its id (once per id and
process), then decodes the JSON texts with the json format's batch path into the table's columns (the text is
self-describing: the writer schema is not needed to read it). Writing registers (or, with
auto.register.schemas=false, looks up) a JSON Schema derived from the table under `<topic>-key` /
`<topic>-value` of every topic written (or option `subject`), with every registry format's checks
(confluent/registry_codec.py), and writes the json format's text after the header.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from ...kernel.errors import FormatOptionError
from ..codec import IGNORE_PARSE_ERRORS, CodecContext, Decoded, Decoder, Encoder
from ..confluent.registry import SchemaRegistry
from ..confluent.registry_codec import REGISTRY_OPTIONS, RegistryCodec
from ..confluent.registry_errors import RegistryError, SchemaNotUsable
from ..confluent.wire import HEADER, framed_ids, header, not_framed
from ..payloads import Layout
from .codec import JsonCodec

NOT_FRAMED = not_framed("the JSON text")
NON_FINITE = ("NaN", "Infinity", "-Infinity")  # the json format's text of non-finite FLOAT and DOUBLE values
_JSON_OPTIONS = tuple(o for o in JsonCodec.declared_options if o.name != IGNORE_PARSE_ERRORS.name)


class JsonConfluentCodec(RegistryCodec):
    name = "json-confluent"
    declared_options = (*REGISTRY_OPTIONS, *_JSON_OPTIONS, IGNORE_PARSE_ERRORS)
    column_types = JsonCodec.column_types

    def __init__(self, options: Mapping[str, str], context: CodecContext) -> None:
        super().__init__(options, context)
        registry = {n for o in REGISTRY_OPTIONS for n in (o.name, *o.aliases)}
        self.json = JsonCodec.named(self.name, {k: v for k, v in options.items() if k not in registry}, context)

    def decoder(self, schema: pa.Schema) -> Decoder:
        return JsonConfluentDecoder(self.registry, self.json.decoder(schema), self.read_subjects())

    def check_writable(self, schema: pa.Schema) -> None:
        self.check_registrable(json_schema(schema, self.context.role), "JSON")

    def encoder(self, schema: pa.Schema) -> Encoder:
        writer = json_schema(schema, self.context.role)
        ids = {s: self.registry.schema_id(s, writer, self.auto_register, "JSON") for s in self.subjects()}
        schema_id = self.one_schema_id(ids, "the table's JSON schema")
        return JsonConfluentEncoder(header(schema_id), self.json.encoder(schema))


class JsonConfluentDecoder(Decoder):
    def __init__(self, registry: SchemaRegistry, body: Decoder, subjects: tuple[str, ...] = ()) -> None:
        self.registry, self.body = registry, body
        self.subjects = subjects  # the table's, named in errors
        self.known: dict[int, str | None] = {}  # per schema id: None (a JSON schema), or why no record can be read
        self.named: dict[int, str] = {}  # per schema id whose record failed: the writer schema as errors name it

    def decode(self, payloads: Sequence[bytes]) -> Decoded:
        framed, ids = framed_ids(Layout.of(payloads))
        failures = dict.fromkeys(np.flatnonzero(~framed).tolist(), NOT_FRAMED)
        readable = framed.copy()
        for schema_id in np.unique(ids[framed]).tolist():  # asked once per id and task
            if schema_id not in self.known:
                self.known[schema_id] = self._unusable(schema_id)
            why = self.known[schema_id]
            if why is not None:
                unreadable = framed & (ids == schema_id)
                readable &= ~unreadable
                failures.update(dict.fromkeys(np.flatnonzero(unreadable).tolist(), why))
        index = np.flatnonzero(readable).tolist()
        decoded = self.body.decode([payloads[i][HEADER:] for i in index])
        for j, reason in decoded.failures:  # named after the record's writer schema: which version wrote it
            schema_id = int(ids[index[j]])
            if schema_id not in self.named:
                self.named[schema_id] = self.registry.writer_named(schema_id, self.subjects)
            failures[index[j]] = f"the record's {self.named[schema_id]}: {reason}"
        return Decoded(decoded.batch, tuple(sorted(failures.items())))

    def _unusable(self, schema_id: int) -> str | None:
        """Why records with this schema id cannot be read, or None. A registry that cannot be reached or refuses
        us fails the task (RegistryError): that is no record's fault."""
        try:
            self.registry.schema(schema_id, "JSON")
        except SchemaNotUsable as e:
            return f"the record's writer schema (id {schema_id}) cannot be had: {e}"
        except RegistryError:
            raise
        return None


class JsonConfluentEncoder(Encoder):
    def __init__(self, header: bytes, body: Encoder) -> None:
        self.header, self.body = header, body

    def encode(self, batch: pa.RecordBatch) -> list[bytes]:
        header = self.header
        return [header + text for text in self.body.encode(batch)]


# -- the JSON Schema of a table -------------------------------------------------------------------------


def json_schema(schema: pa.Schema, role: str) -> dict[str, Any]:
    """The JSON Schema (draft-07) of the json format's text of a row: an object with a property per column,
    nullable columns also null, the others required; every value the json format writes is valid under it."""
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": f"record_{role}",
        **_object(list(schema)),
    }


def _object(fields: list[pa.Field]) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": {f.name: _typed(f.type, f.nullable) for f in fields}}
    required = [f.name for f in fields if not f.nullable]
    if required:
        out["required"] = required
    return out


def _typed(t: pa.DataType, nullable: bool) -> dict[str, Any]:
    one = _type(t)
    if not nullable:
        return one
    # One flat oneOf: a nullable DOUBLE's schema is then the [null, number] earlier versions registered with one more
    # alternative, which a registry's BACKWARD check takes as compatible (Apicurio's refuses a nested oneOf).
    return {"oneOf": [{"type": "null"}, *one.get("oneOf", [one])]}


def _type(t: pa.DataType) -> dict[str, Any]:
    if pa.types.is_boolean(t):
        return {"type": "boolean"}
    if pa.types.is_integer(t):
        return {"type": "integer"}
    if pa.types.is_floating(t):
        # NaN and ±Infinity are written as strings, as Flink's json format writes them (JSON has no such number):
        # the schema holds them, so that a validating reader (Confluent's JSONDeserializer) takes every record.
        return {"oneOf": [{"type": "number"}, {"type": "string", "enum": list(NON_FINITE)}]}
    if pa.types.is_decimal(t):
        return {"type": "number"}
    if pa.types.is_date(t):
        return {"type": "string", "format": "date"}
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return {"type": "string"}  # BINARY: the json format's base64 text
    if pa.types.is_timestamp(t) or pa.types.is_time(t):
        return {"type": "string"}  # the json format's SQL or ISO-8601 text (not RFC 3339's date-time)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return {"type": "array", "items": _typed(t.value_type, t.value_field.nullable)}
    if pa.types.is_map(t):
        return {"type": "object", "additionalProperties": _typed(t.item_type, t.item_field.nullable)}
    if pa.types.is_struct(t):
        return _object(list(t))
    raise FormatOptionError(f"json-confluent has no JSON Schema for the column type {t}")
