"""The schema evolution golden corpus: for each change a producer team makes to a subject (a field added or removed,
with and without a default; a type promoted; a protobuf field added or retired; a JSON Schema property added or
removed) under each compatibility level (BACKWARD, FORWARD, FULL), what a real registry said of the change and
what Confluent's own deserializer reads from the records Confluent's serializers wrote of each version
(tests/formats/test_evolution_golden.py reads them back through the connector).

    integration/dev python -m integration.evolution_golden

Not part of CI: the files it writes (tests/formats/golden/evolution/<format>.json) are committed. It starts a
real Apicurio registry (integration/registry.py), and per case and level: sets the subject's compatibility,
registers version 1 then version 2 through confluent-kafka's AvroSerializer / ProtobufSerializer / JSONSerializer
(recording whether the registry ACCEPTED each version under the level, and its answer when it did not), writes
records of each version, and records what AvroDeserializer (the latest schema as its reader), ProtobufDeserializer
(the latest message class) and JSONDeserializer (the writer's schema) give for every record: the expected rows, in
the latest version's fields (bytes as base64). A change the registry refuses is no read case for that level
(`read`: false), except protobuf's: Apicurio refuses some FORWARD/FULL protobuf changes that Confluent's registry
accepts, so the version is registered under NONE to keep its bytes (`registered_under`: "NONE", with a note) and
the case is read.
"""

from __future__ import annotations

import base64
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from integration.registry import APICURIO_VERSION, SchemaRegistryServer

GOLDEN = Path(__file__).resolve().parent.parent / "tests" / "formats" / "golden" / "evolution"
LEVELS = ("BACKWARD", "FORWARD", "FULL")


# -- avro -----------------------------------------------------------------------------------------------------------


def _record(*fields: dict) -> dict:
    return {"type": "record", "name": "Item", "namespace": "shop", "fields": [{"name": "id", "type": "int"}, *fields]}


# name -> (v1, v2, v1's values, v2's values); values hold every field of their version (id unique across the case).
# fmt: off
AVRO_CHANGES: list[tuple[str, dict, dict, list[dict], list[dict]]] = [
    ("field_added_with_default", _record({"name": "name", "type": "string"}),
     _record({"name": "name", "type": "string"}, {"name": "tier", "type": "string", "default": "basic"}),
     [{"id": 1, "name": "old"}], [{"id": 2, "name": "new", "tier": "gold"}]),
    ("nullable_field_added_with_default", _record({"name": "name", "type": "string"}),
     _record({"name": "name", "type": "string"}, {"name": "note", "type": ["null", "string"], "default": None}),
     [{"id": 1, "name": "old"}], [{"id": 2, "name": "new", "note": "n"}, {"id": 3, "name": "new", "note": None}]),
    ("field_added_without_default", _record({"name": "name", "type": "string"}),
     _record({"name": "name", "type": "string"}, {"name": "stock", "type": "int"}),
     [{"id": 1, "name": "old"}], [{"id": 2, "name": "new", "stock": 3}]),
    ("field_removed_with_default",
     _record({"name": "name", "type": "string"}, {"name": "tier", "type": "string", "default": "basic"}),
     _record({"name": "name", "type": "string"}),
     [{"id": 1, "name": "old", "tier": "gold"}], [{"id": 2, "name": "new"}]),
    ("field_removed_without_default",
     _record({"name": "name", "type": "string"}, {"name": "stock", "type": "int"}),
     _record({"name": "name", "type": "string"}),
     [{"id": 1, "name": "old", "stock": 3}], [{"id": 2, "name": "new"}]),
    ("int_to_long", _record({"name": "n", "type": "int"}), _record({"name": "n", "type": "long"}),
     [{"id": 1, "n": -(2**31)}, {"id": 2, "n": 2**31 - 1}], [{"id": 3, "n": 2**62}]),
    ("int_to_float", _record({"name": "n", "type": "int"}), _record({"name": "n", "type": "float"}),
     [{"id": 1, "n": -(2**24)}, {"id": 2, "n": 7}], [{"id": 3, "n": 0.5}]),
    ("int_to_double", _record({"name": "n", "type": "int"}), _record({"name": "n", "type": "double"}),
     [{"id": 1, "n": -(2**31)}, {"id": 2, "n": 2**31 - 1}], [{"id": 3, "n": 0.25}]),
    ("long_to_double", _record({"name": "n", "type": "long"}), _record({"name": "n", "type": "double"}),
     [{"id": 1, "n": -(2**53)}, {"id": 2, "n": 2**40 + 1}], [{"id": 3, "n": 1.5}]),
    ("float_to_double", _record({"name": "n", "type": "float"}), _record({"name": "n", "type": "double"}),
     [{"id": 1, "n": 0.1}, {"id": 2, "n": -3.5}], [{"id": 3, "n": 0.1}]),
    ("string_to_bytes", _record({"name": "b", "type": "string"}), _record({"name": "b", "type": "bytes"}),
     [{"id": 1, "b": "héllo"}, {"id": 2, "b": ""}], [{"id": 3, "b": b"\x00\xff"}]),
    ("bytes_to_string", _record({"name": "b", "type": "bytes"}), _record({"name": "b", "type": "string"}),
     [{"id": 1, "b": "héllo".encode()}, {"id": 2, "b": b""}], [{"id": 3, "b": "new"}]),
]
# fmt: on


def _json_value(value: Any) -> Any:
    if isinstance(value, bytes):
        return {"base64": base64.b64encode(value).decode()}
    return value


def _avro_case(client: Any, topic: str, level: str, change: tuple) -> dict:
    from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer

    name, v1, v2, values1, values2 = change
    versions = []
    for schema, values in ((v1, values1), (v2, values2)):
        serialize = AvroSerializer(client, json.dumps(schema), conf={"auto.register.schemas": True})
        versions.append((schema, lambda v, s=serialize: s(v, _value(topic)), values))
    case = _write(client, topic, level, name, "AVRO", versions, keep_refused=False)
    if case["read"]:
        deserialize = AvroDeserializer(client, json.dumps(v2))  # Confluent's reader: the latest schema
        _expect(case, lambda payload: deserialize(payload, _value(topic)), [f["name"] for f in v2["fields"]])
    return case


# -- protobuf -------------------------------------------------------------------------------------------------------

INT32, STRING = 5, 9
# name -> (v1's fields, v2's fields, v2's retired (name, number), v1's values, v2's values)
# fmt: off
PROTOBUF_CHANGES: list[tuple[str, tuple, tuple, tuple[str, int] | None, list[dict], list[dict]]] = [
    ("field_added", (("id", 1, INT32), ("name", 2, STRING)),
     (("id", 1, INT32), ("name", 2, STRING), ("stock", 3, INT32)), None,
     [{"id": 1, "name": "old"}], [{"id": 2, "name": "new", "stock": 3}, {"id": 3, "name": "", "stock": 0}]),
    ("field_retired", (("id", 1, INT32), ("name", 2, STRING), ("qty", 3, INT32)),
     (("id", 1, INT32), ("name", 2, STRING)), ("qty", 3),
     [{"id": 1, "name": "old", "qty": 5}], [{"id": 2, "name": "new"}]),
]
# fmt: on


def item_class(fields: tuple[tuple[str, int, int], ...], retired: tuple[str, int] | None = None) -> type:
    """A proto3 message `shop.Item` of (name, number, type) fields (`retired`: a field's name and number reserved),
    as protoc gives it."""
    from google.protobuf import descriptor_pb2
    from pyspark_upsert_kafka.formats.protobuf.schema import message_class, pool_of

    file = descriptor_pb2.FileDescriptorProto(name="shop/item.proto", package="shop", syntax="proto3")
    message = file.message_type.add(name="Item")
    for name, number, kind in fields:
        message.field.add(name=name, number=number, type=kind, label=1, json_name=name)
    if retired is not None:
        message.reserved_name.append(retired[0])
        message.reserved_range.add(start=retired[1], end=retired[1] + 1)
    return message_class(pool_of([file]).FindMessageTypeByName("shop.Item"))


def _protobuf_case(client: Any, topic: str, level: str, change: tuple) -> dict:
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer

    name, fields1, fields2, retired, values1, values2 = change
    conf = {"use.deprecated.format": False, "auto.register.schemas": True}
    versions = []
    for cls, values in ((item_class(fields1), values1), (item_class(fields2, retired), values2)):
        serialize = ProtobufSerializer(cls, client, conf)
        versions.append((cls, lambda v, s=serialize, c=cls: s(c(**v), _value(topic)), values))
    case = _write(client, topic, level, name, "PROTOBUF", versions, keep_refused=True)
    latest = versions[-1][0]
    deserialize = ProtobufDeserializer(latest, {"use.deprecated.format": False})  # the latest message class
    columns = [f[0] for f in fields2]
    _expect(case, lambda payload: _message_dict(deserialize(payload, _value(topic)), columns), columns)
    return case


def _message_dict(message: Any, columns: list[str]) -> dict:
    return {c: getattr(message, c) for c in columns}


# -- JSON Schema ----------------------------------------------------------------------------------------------------


def _object(closed: bool, **properties: dict) -> dict:
    return {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Item", "type": "object",
            "properties": properties, "required": ["id"], "additionalProperties": not closed}  # fmt: skip


_ID, _NAME, _TIER = {"type": "integer"}, {"type": "string"}, {"type": "string"}
# name -> (v1, v2, v1's values, v2's values), in a closed content model (no other properties) and an open one.
JSON_CHANGES: list[tuple[str, dict, dict, list[dict], list[dict]]] = [
    (
        f"property_{change}_{'closed' if closed else 'open'}",
        *(
            (_object(closed, id=_ID, name=_NAME), _object(closed, id=_ID, name=_NAME, tier=_TIER))
            if change == "added"
            else (_object(closed, id=_ID, name=_NAME, tier=_TIER), _object(closed, id=_ID, name=_NAME))
        ),
        [{"id": 1, "name": "old"}] + ([{"id": 2, "name": "old", "tier": "gold"}] if change == "removed" else []),
        [{"id": 3, "name": "new"}] + ([{"id": 4, "name": "new", "tier": "gold"}] if change == "added" else []),
    )
    for change in ("added", "removed")
    for closed in (True, False)
]


def _json_case(client: Any, topic: str, level: str, change: tuple) -> dict:
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer

    name, v1, v2, values1, values2 = change
    versions = []
    for schema, values in ((v1, values1), (v2, values2)):
        serialize = JSONSerializer(json.dumps(schema), client, conf={"auto.register.schemas": True})
        versions.append((schema, lambda v, s=serialize: s(v, _value(topic)), values))
    case = _write(client, topic, level, name, "JSON", versions, keep_refused=False)
    if case["read"]:
        # JSON Schema has no reader schema to resolve to: JSONDeserializer validates each record against the writer
        # schema its id names and gives the object it holds. In the latest version's properties (the columns): a
        # property the latest lacks is no column, one a record lacks is null.
        deserialize = JSONDeserializer(None, schema_registry_client=client)
        columns = list(v2["properties"])
        _expect(case, lambda payload: _projected(deserialize(payload, _value(topic)), columns), columns)
    return case


def _projected(value: dict, columns: list[str]) -> dict:
    return {c: value.get(c) for c in columns}


# -- common ---------------------------------------------------------------------------------------------------------


def _value(topic: str) -> Any:
    from confluent_kafka.serialization import MessageField, SerializationContext

    return SerializationContext(topic, MessageField.VALUE)


def _compatibility(client: Any, subject: str, level: str) -> None:
    from confluent_kafka.schema_registry import ServerConfig
    from confluent_kafka.schema_registry.common.schema_registry_client import ConfigCompatibilityLevel

    client.set_config(subject, ServerConfig(compatibility=ConfigCompatibilityLevel(level)))


def _write(
    client: Any,
    topic: str,
    level: str,
    name: str,
    kind: str,
    versions: list[tuple[Any, Callable[[dict], bytes], list[dict]]],
    *,
    keep_refused: bool,
) -> dict:
    """Versions 1 and 2 registered by their serializer under `level`, and their records written: the case, with
    what the registry answered each version."""
    from confluent_kafka.schema_registry.error import SchemaRegistryError

    subject = f"{topic}-value"
    _compatibility(client, subject, level)
    case: dict[str, Any] = {"case": f"{name}_{level.lower()}", "change": name, "level": level, "versions": []}
    records = []
    for number, (_, serialize, values) in enumerate(versions, 1):
        answer = None
        try:
            written = [serialize(v) for v in values]
        except SchemaRegistryError as e:
            answer = f"{e.http_status_code} {e.error_code}: {e.error_message}"
            if not keep_refused:
                case["versions"].append({"version": number, "accepted": False, "answer": answer})
                break
            _compatibility(client, subject, "NONE")  # keep the bytes: Confluent's registry accepts the change
            written = [serialize(v) for v in values]
            _compatibility(client, subject, level)
            case["registered_under"] = "NONE"
            case["note"] = (
                f"the registry (Apicurio) refused version {number} under {level}; Confluent's registry accepts "
                "this protobuf change there: registered under NONE to keep its bytes, and read"
            )
        case["versions"].append(
            {"version": number, "accepted": answer is None, **({"answer": answer} if answer else {})}
        )
        records += [{"version": number, "value": {k: _json_value(v) for k, v in value.items()}, "payload": p}
                    for value, p in zip(values, written)]  # fmt: skip
    case["read"] = all(v["accepted"] for v in case["versions"]) or "registered_under" in case
    if case["read"]:
        case["schemas"] = _registered(client, subject)
        case["records"] = records
    return case


def _registered(client: Any, subject: str) -> list[dict]:
    """The subject's versions in registration order (subject, version, id, type, text, references)."""
    out = []
    for version in client.get_versions(subject):
        registered = client.get_version(subject, version)
        refs = [[r.name, r.subject, r.version] for r in registered.schema.references or []]
        out.append({"subject": subject, "version": version, "id": registered.schema_id,
                    "type": registered.schema.schema_type or "AVRO", "schema": registered.schema.schema_str,
                    "references": refs})  # fmt: skip
    return out


def _expect(case: dict, deserialize: Callable[[bytes], dict], columns: list[str]) -> None:
    """Each record's payload as base64, and what Confluent's deserializer gives for it (the expected row, in the
    latest version's fields), or its error."""
    case["columns"] = columns
    for record in case["records"]:
        payload = record.pop("payload")
        record["payload"] = base64.b64encode(payload).decode()
        try:
            row = deserialize(payload)
        except Exception as e:  # what Confluent's deserializer refuses: the record reads as no row
            record["error"] = f"{type(e).__name__}: {e}"
        else:
            record["row"] = {k: _json_value(v) for k, v in row.items()}


def main() -> int:
    from confluent_kafka.schema_registry import SchemaRegistryClient

    GOLDEN.mkdir(parents=True, exist_ok=True)
    server = SchemaRegistryServer()
    server.start()
    try:
        client = SchemaRegistryClient({"url": server.url})
        for fmt, changes, write, writer in (
            ("avro", AVRO_CHANGES, _avro_case, "AvroSerializer; AvroDeserializer with the latest schema as reader"),
            ("protobuf", PROTOBUF_CHANGES, _protobuf_case,
             "ProtobufSerializer (use.deprecated.format false); ProtobufDeserializer with the latest message class"),
            ("json", JSON_CHANGES, _json_case, "JSONSerializer; JSONDeserializer (the writer schema)"),
        ):  # fmt: skip
            cases = [
                write(client, f"evolution-{fmt}-{change[0]}-{level.lower()}".replace("_", "-"), level, change)
                for change in changes
                for level in LEVELS
            ]
            content = {
                "writer": f"confluent-kafka {writer}; Apicurio Registry {APICURIO_VERSION}",
                "rows": "each record's row: what Confluent's deserializer gave, in the latest version's fields "
                "(bytes as {'base64': ...}); 'error' where it refused the record",
                "cases": cases,
            }
            path = GOLDEN / f"{fmt}.json"
            path.write_text(json.dumps(content, indent=1, ensure_ascii=False) + "\n")
            print(f"wrote {path}: {sum(c['read'] for c in cases)} read cases of {len(cases)}")
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(main())
