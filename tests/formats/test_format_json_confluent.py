"""json-confluent against the real broker and schema registry (Apicurio's Confluent-compatible API): records
confluent-kafka's own JSONSerializer wrote read back exactly; records we write read by its JSONDeserializer (which
validates them against the JSON Schema we registered); and bad records named by topic, partition and offset, or
skipped with ignore-parse-errors."""

from __future__ import annotations

import datetime as dt
import json
import math
import uuid
from decimal import Decimal

import jsonschema
import pyarrow as pa
import pytest
from confluent_kafka.schema_registry import Schema, SchemaReference
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from pyspark_upsert_kafka.formats import CodecContext, make_codec
from pyspark_upsert_kafka.formats.json.confluent_codec import json_schema

from tests.formats.test_format_avro_confluent import confluent_client
from tests.support.kafka_io import consume_all, produce
from tests.support.read_helpers import rows_of
from tests.support.registry_fixtures import CHECK_OF_ANOTHER_TYPE
from tests.support.write_helpers import write

FMT = "json-confluent"
ORDER = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Order",
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "name": {"oneOf": [{"type": "null"}, {"type": "string"}]},
        "price": {"type": "number"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "ship": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
    "required": ["id"],
}
COLUMNS = "id BIGINT, name STRING, price DOUBLE, tags ARRAY<STRING>, ship STRUCT<city: STRING>"


def json_options(opts: dict, url: str, more: dict | None = None) -> dict:
    return {**opts, "value.format": FMT, f"value.{FMT}.url": url} | (more or {})


def serialized(topic: str, url: str, values: list[dict]) -> list[bytes]:
    serialize = JSONSerializer(json.dumps(ORDER), confluent_client(url), conf={"auto.register.schemas": True})
    return [serialize(v, SerializationContext(topic, MessageField.VALUE)) for v in values]


ORDERS = [
    {"id": 1, "name": "dune", "price": 12.5, "tags": ["sf", "classic"], "ship": {"city": "Zürich"}},
    {"id": 2, "name": None, "price": 0.25, "tags": [], "ship": {"city": "Bern"}},
]


def test_records_of_confluents_json_serializer_read_back_exactly(spark, options, bootstrap, new_topic, registry_url):
    topic = new_topic()
    values = serialized(topic, registry_url, ORDERS)
    assert all(v[0] == 0 for v in values)  # Confluent's header, as JSONSerializer wrote it
    produce(bootstrap, topic, [(json.dumps({"id": o["id"]}).encode(), v) for o, v in zip(ORDERS, values)])
    rows = rows_of(spark, json_options(options(topic, {"read.mode": "table"}), registry_url), COLUMNS)
    assert sorted(rows) == [(1, "dune", 12.5, ["sf", "classic"], ("Zürich",)), (2, None, 0.25, [], ("Bern",))]


def test_records_written_here_are_read_by_confluents_json_deserializer(
    spark, options, bootstrap, new_topic, registry_url
):
    topic = new_topic()
    opts = json_options(options(topic), registry_url)
    schema = f"{COLUMNS}, at TIMESTAMP_NTZ, day DATE"
    at, day = dt.datetime(2024, 5, 6, 7, 8, 9, 123000), dt.date(2024, 5, 6)
    write(
        spark, opts, [(1, "dune", 12.5, ["sf"], ("Zürich",), at, day), (2, None, None, None, None, None, None)], schema
    )
    client = confluent_client(registry_url)
    deserialize = JSONDeserializer(None, schema_registry_client=client)  # validates each record against its schema
    records = consume_all(bootstrap, topic)
    values = [deserialize(v, SerializationContext(topic, MessageField.VALUE)) for *_, v in records]
    assert values == [
        {"id": 1, "name": "dune", "price": 12.5, "tags": ["sf"], "ship": {"city": "Zürich"},
         "at": "2024-05-06 07:08:09.123", "day": "2024-05-06"},
        {"id": 2, "name": None, "price": None, "tags": None, "ship": None, "at": None, "day": None},
    ]  # fmt: skip
    latest = client.get_latest_version(f"{topic}-value")
    assert latest.schema.schema_type == "JSON"
    assert all(v[0] == 0 and int.from_bytes(v[1:5], "big") == latest.schema_id for *_, v in records)
    assert rows_of(spark, {**opts, "read.mode": "table"}, schema)[0] == (1, "dune", 12.5, ["sf"], ("Zürich",), at, day)


def test_a_write_whose_json_schema_the_subject_refuses_fails_before_writing(
    spark, options, bootstrap, new_topic, registry_url, registry_api
):
    """The subject holds another type (Avro): the registry's check refuses the table's JSON schema (Confluent's API
    answers is_compatible false), and the write fails before writing, naming the subject and the option to change."""
    topic = new_topic()
    subject, client = f"{topic}-value", confluent_client(registry_url)
    client.register_schema(
        subject,
        Schema(json.dumps({"type": "record", "name": "R", "fields": [{"name": "id", "type": "long"}]}), "AVRO"),
    )
    table = json_schema(pa.schema([pa.field("id", pa.int64(), False), ("name", pa.string())]), "value")
    with registry_api.as_documented(CHECK_OF_ANOTHER_TYPE):
        assert client.test_compatibility(subject, Schema(json.dumps(table), "JSON")) is False

    # The connector's error either way: the check's refusal (OptionError), or the registry's deviating answer to it.
    refused = rf"\b(OptionError|RegistryError): .*subject '{subject}'.*the format's 'subject' option"
    with pytest.raises(Exception, match=refused):
        write(spark, json_options(options(topic), registry_url), [(1, "a")], "id BIGINT, name STRING")
    assert consume_all(bootstrap, topic) == []


def test_a_subject_holding_the_earlier_schema_of_a_double_takes_the_one_holding_non_finite_values_under_backward(
    spark, options, bootstrap, new_topic, registry_url
):
    """Earlier versions registered a nullable DOUBLE as [null, number]; the schema now holding NaN and ±Infinity is
    a compatible next version under the registry's BACKWARD rule, and every record reads with the validating
    JSONDeserializer, the earlier one's too."""
    from confluent_kafka.schema_registry import ServerConfig
    from confluent_kafka.schema_registry.common.schema_registry_client import ConfigCompatibilityLevel

    topic = new_topic()
    subject = f"{topic}-value"
    client = confluent_client(registry_url)
    earlier = json_schema(pa.schema([pa.field("id", pa.int64(), False), ("d", pa.float64())]), "value")
    earlier["properties"]["d"] = {"oneOf": [{"type": "null"}, {"type": "number"}]}
    serialize = JSONSerializer(json.dumps(earlier), client, conf={"auto.register.schemas": True})
    old = serialize({"id": 1, "d": 0.5}, SerializationContext(topic, MessageField.VALUE))
    produce(bootstrap, topic, [(b'{"id":1}', old)])
    client.set_config(subject, ServerConfig(compatibility=ConfigCompatibilityLevel.BACKWARD))

    rows = [(2, math.nan), (3, -math.inf), (4, None)]
    write(spark, json_options(options(topic), registry_url), rows, "id BIGINT NOT NULL, d DOUBLE")

    assert client.get_versions(subject) == [1, 2]
    deserialize = JSONDeserializer(None, schema_registry_client=client)
    values = [
        deserialize(v, SerializationContext(topic, MessageField.VALUE)) for *_, v in consume_all(bootstrap, topic)
    ]
    assert values == [{"id": 1, "d": 0.5}, {"id": 2, "d": "NaN"}, {"id": 3, "d": "-Infinity"}, {"id": 4, "d": None}]


@pytest.mark.parametrize(
    ("bad", "error"),
    [
        (b'\x01\x00\x00\x00\x01{"id":9}', r"not in the Confluent wire format \(magic byte 0"),
        (b'\x00\x7f\xff\xff\x01{"id":9}', r"writer schema \(id 2147483393\) cannot be had: .*HTTP 404"),
        ("not-json", r"JSON|json"),
    ],
    ids=["wrong-magic-byte", "unknown-schema-id", "json-that-does-not-parse"],
)
def test_bad_records_fail_naming_topic_partition_offset_or_are_skipped(
    spark, options, bootstrap, new_topic, registry_url, bad, error
):
    topic = new_topic()
    good = serialized(topic, registry_url, ORDERS[:1])[0]
    if bad == "not-json":  # a registered id, then text that is no JSON
        bad = good[:5] + b'{"id": 9, "name": '
    produce(bootstrap, topic, [(b'{"id":1}', good), (b'{"id":9}', bad)])
    opts = json_options(options(topic, {"read.mode": "changelog"}), registry_url)
    schema = f"{COLUMNS}, _change_type STRING"
    with pytest.raises(Exception, match=rf"topic '{topic}' partition 0 offset 1 with format '{FMT}': .*{error}"):
        rows_of(spark, opts, schema)
    skip = json_options(opts, registry_url, {f"value.{FMT}.ignore-parse-errors": "true"})
    assert rows_of(spark, skip, schema) == [(1, "dune", 12.5, ["sf", "classic"], ("Zürich",), "upsert")]


def test_the_derived_json_schema_holds_every_row_the_json_format_writes_and_refuses_other_types():
    """What JSONDeserializer validates records against: each column's JSON type, nulls where the column is
    nullable, NOT NULL columns required; a FLOAT or DOUBLE also NaN and ±Infinity, which JSON writes as strings."""
    schema = pa.schema([
        pa.field("id", pa.int64(), False), ("name", pa.string()), ("ok", pa.bool_()), ("price", pa.decimal128(10, 2)),
        ("tags", pa.list_(pa.string())), ("attrs", pa.map_(pa.string(), pa.int32())),
        ("ship", pa.struct([("city", pa.string())])), ("at", pa.timestamp("us")), ("day", pa.date32()),
        ("raw", pa.binary()), pa.field("d", pa.float64(), False), ("f", pa.float32()),
        ("ds", pa.list_(pa.float64())), ("dm", pa.map_(pa.string(), pa.float32())),
    ])  # fmt: skip
    codec = make_codec(FMT, "value.format", {"url": "http://registry:8081"}, CodecContext(role="value"))
    written = json_schema(schema, "value")
    row = {"id": 1, "name": "a", "ok": True, "price": Decimal("1.25"), "tags": ["x", None], "attrs": {"k": 1},
           "ship": {"city": "Bern"}, "at": dt.datetime(2024, 5, 6, 7, 8, 9), "day": dt.date(2024, 5, 6),
           "raw": b"\0", "d": math.nan, "f": -math.inf, "ds": [math.inf, -0.0, None],
           "dm": {"k": math.nan}}  # fmt: skip
    batch = pa.RecordBatch.from_pylist([row, {"id": 2, "d": 1e300, "f": None}], schema=schema)
    texts = codec.json.encoder(schema).encode(batch)
    assert b'"d":"NaN"' in texts[0] and b'"ds":["Infinity",-0.0,null]' in texts[0]
    for text in texts:
        jsonschema.validate(json.loads(text), written)
    for wrong in ({"name": "a"}, {"id": "1"}, {"id": 1, "ok": "yes"}, {"id": 1, "tags": [1]}, {"id": 1, "ship": 3},
                  {"id": 1, "d": "nan"}, {"id": 1, "d": None}, {"id": 1, "d": 1, "ds": ["1.5"]}):  # fmt: skip
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(wrong, written)


def test_a_schema_id_holding_an_avro_schema_is_a_bad_record_naming_the_type(registry_url):
    client = confluent_client(registry_url)
    avro = json.dumps({"type": "record", "name": "R", "fields": [{"name": "id", "type": "long"}]})
    schema_id = client.register_schema(f"avro-{uuid.uuid4().hex}", Schema(avro, "AVRO"))
    codec = make_codec(FMT, "value.format", {"url": registry_url}, CodecContext(role="value"))
    decoder = codec.decoder(pa.schema([("id", pa.int64())]))
    decoded = decoder.decode([b"\0" + schema_id.to_bytes(4, "big") + b'{"id": 1}'])
    assert decoded.batch.num_rows == 0
    assert decoded.failures == (
        (0, f"the record's writer schema (id {schema_id}) cannot be had: schema id {schema_id} holds a AVRO schema; "
            "the json-confluent format reads JSON Schema only"),
    )  # fmt: skip


def test_records_whose_schema_references_another_subject_are_read(registry_url):
    """A writer schema with a `$ref` to a schema of another subject (confluent-kafka resolves it to validate while
    writing): the text reads into the columns, the reference needs no resolving here."""
    client = confluent_client(registry_url)
    city = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    subject = f"address-{uuid.uuid4().hex}"
    client.register_schema(subject, Schema(json.dumps(city), "JSON"))
    order = {"type": "object", "properties": {"id": {"type": "integer"}, "ship": {"$ref": "address.json"}}}
    writer = Schema(json.dumps(order), "JSON", [SchemaReference("address.json", subject, 1)])
    serialize = JSONSerializer(writer, client, conf={"auto.register.schemas": True})
    topic = f"orders-{uuid.uuid4().hex}"
    value = serialize({"id": 7, "ship": {"city": "Bern"}}, SerializationContext(topic, MessageField.VALUE))
    with pytest.raises(Exception, match="city"):  # the reference was resolved by the serializer: it validates
        serialize({"id": 8, "ship": {}}, SerializationContext(topic, MessageField.VALUE))
    codec = make_codec(FMT, "value.format", {"url": registry_url}, CodecContext(role="value", topics=(topic,)))
    columns = pa.schema([("id", pa.int64()), ("ship", pa.struct([("city", pa.string())]))])
    decoded = codec.decoder(columns).decode([value])
    assert decoded.failures == () and decoded.batch.to_pylist() == [{"id": 7, "ship": {"city": "Bern"}}]
