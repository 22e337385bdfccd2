"""debezium-avro-confluent against the real broker and schema registry: Debezium events in Avro as another system
writes them (confluent-kafka's AvroSerializer with the schema Debezium's AvroConverter registers: an Envelope of
before/after Value records, source, op, ts_ms) read as changes and tables; a changelog written as Flink writes it
({before, after, op}) read by confluent-kafka's AvroDeserializer; and bad records named by topic, partition and
offset, or skipped with ignore-parse-errors."""

from __future__ import annotations

import json

import pytest
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from tests.formats.test_format_avro_confluent import confluent_client
from tests.support.kafka_io import consume_all, produce
from tests.support.read_helpers import rows_of
from tests.support.write_helpers import write

FMT = "debezium-avro-confluent"
CUSTOMERS = "id INT, first_name STRING, email STRING"
# The shape of the schema Debezium's MySQL connector registers for dbserver1.inventory.customers (trimmed source).
VALUE = {
    "type": "record",
    "name": "Value",
    "namespace": "dbserver1.inventory.customers",
    "fields": [
        {"name": "id", "type": "int"},
        {"name": "first_name", "type": "string"},
        {"name": "email", "type": ["null", "string"], "default": None},
    ],
}
ENVELOPE = {
    "type": "record",
    "name": "Envelope",
    "namespace": "dbserver1.inventory.customers",
    "fields": [
        {"name": "before", "type": ["null", VALUE], "default": None},
        {"name": "after", "type": ["null", "Value"], "default": None},
        {"name": "source", "type": {"type": "record", "name": "Source", "namespace": "io.debezium.connector.mysql",
            "fields": [{"name": "db", "type": "string"}, {"name": "table", "type": ["null", "string"]},
                       {"name": "ts_ms", "type": "long"}]}},
        {"name": "op", "type": "string"},
        {"name": "ts_ms", "type": ["null", "long"], "default": None},
    ],
    "connect.name": "dbserver1.inventory.customers.Envelope",
}  # fmt: skip
SOURCE = {"db": "inventory", "table": "customers", "ts_ms": 1700000000000}


def registry_options(opts: dict, url: str, more: dict | None = None) -> dict:
    return {**opts, "value.format": FMT, f"value.{FMT}.url": url} | (more or {})


def debezium_records(topic: str, url: str, events: list[tuple]) -> list[tuple[bytes, bytes]]:
    """(key, value) records as Debezium's AvroConverter would write them: here confluent-kafka's serializer."""
    serialize = AvroSerializer(confluent_client(url), json.dumps(ENVELOPE))
    context = SerializationContext(topic, MessageField.VALUE)
    return [
        (json.dumps({"id": (after or before)["id"]}).encode(),
         serialize({"before": before, "after": after, "source": SOURCE, "op": op, "ts_ms": 1}, context))
        for op, before, after in events
    ]  # fmt: skip


SALLY = {"id": 1001, "first_name": "Sally", "email": "sally@acme.com"}
GEORGE = {"id": 1002, "first_name": "George", "email": None}
EVENTS = [
    ("r", None, SALLY),
    ("c", None, GEORGE),
    ("u", SALLY, {**SALLY, "email": "sally.thomas@acme.com"}),
    ("d", GEORGE, None),
]


@pytest.fixture
def customers(bootstrap, new_topic, registry_url) -> str:
    topic = new_topic()
    produce(bootstrap, topic, debezium_records(topic, registry_url, EVENTS))
    return topic


def test_events_confluents_serializer_wrote_read_as_changes_and_as_a_table(spark, options, customers, registry_url):
    opts = registry_options(options(customers, {"read.mode": "changelog"}), registry_url)
    assert rows_of(spark, opts, f"{CUSTOMERS}, _change_type STRING") == [
        (1001, "Sally", "sally@acme.com", "upsert"),
        (1002, "George", None, "upsert"),
        (1001, "Sally", "sally.thomas@acme.com", "upsert"),
        (1002, None, None, "delete"),
    ]
    full = registry_options(opts, registry_url, {f"value.{FMT}.changelog-mode": "all"})
    assert rows_of(spark, full, f"{CUSTOMERS}, _change_type STRING") == [
        (1001, "Sally", "sally@acme.com", "insert"),
        (1002, "George", None, "insert"),
        (1001, "Sally", "sally@acme.com", "update_preimage"),
        (1001, "Sally", "sally.thomas@acme.com", "update_postimage"),
        (1002, "George", None, "delete"),
    ]
    table = registry_options(options(customers, {"read.mode": "table"}), registry_url)
    assert rows_of(spark, table, CUSTOMERS) == [(1001, "Sally", "sally.thomas@acme.com")]


def test_a_changelog_written_as_flink_writes_it_is_read_by_confluents_deserializer(
    spark, options, bootstrap, new_topic, registry_url
):
    topic = new_topic()
    opts = registry_options(options(topic), registry_url)
    rows = [(1, "a", None, "upsert"), (1, "a", None, "update_preimage"), (1, "b", "b@x", "update_postimage"),
            (2, "c", None, "delete")]  # fmt: skip
    write(spark, opts, rows, f"{CUSTOMERS}, _change_type STRING")
    deserialize = AvroDeserializer(confluent_client(registry_url))
    context = SerializationContext(topic, MessageField.VALUE)
    values = [deserialize(v, context) for *_, v in consume_all(bootstrap, topic)]
    a, b = {"id": 1, "first_name": "a", "email": None}, {"id": 1, "first_name": "b", "email": "b@x"}
    assert values == [
        {"before": None, "after": a, "op": "c"},
        {"before": a, "after": None, "op": "d"},  # a pre-image is written as a delete, as Flink does
        {"before": None, "after": b, "op": "c"},
        {"before": {"id": 2, "first_name": "c", "email": None}, "after": None, "op": "d"},
    ]
    assert rows_of(spark, {**opts, "read.mode": "table"}, CUSTOMERS) == [(1, "b", "b@x")]


@pytest.mark.parametrize(
    ("bad", "error"),
    [
        (b"\x01\x00\x00\x00\x01\x00", r"not in the Confluent wire format \(magic byte 0"),
        (
            b"\x00\x7f\xff\xff\x01\x00",
            r"writer schema \(id 2147483393\) cannot be had: .* HTTP 404 .*the registry the producer wrote through",
        ),
        ("x", r"unknown op \"x\"; Debezium's are c, r, u, d"),
        ("t", r"a truncate event \(op 't'\)"),
        ("d", r"op 'd' has no 'before' row"),
    ],
    ids=["wrong-magic-byte", "unknown-schema-id", "unknown-op", "truncate", "delete-without-before"],
)
def test_bad_records_fail_naming_topic_partition_offset_or_are_skipped(
    spark, options, bootstrap, new_topic, registry_url, bad, error
):
    topic = new_topic()
    good = debezium_records(topic, registry_url, [("c", None, SALLY)])
    if isinstance(bad, str):  # an op that gives no row, as a serializer writes it
        serialize = AvroSerializer(confluent_client(registry_url), json.dumps(ENVELOPE))
        event = {"before": None, "after": None if bad == "d" else SALLY, "source": SOURCE, "op": bad, "ts_ms": 1}
        bad = serialize(event, SerializationContext(topic, MessageField.VALUE))
    produce(bootstrap, topic, [*good, (b'{"id":9}', bad)])
    opts = registry_options(options(topic, {"read.mode": "changelog"}), registry_url)
    schema = f"{CUSTOMERS}, _change_type STRING"
    with pytest.raises(Exception, match=rf"topic '{topic}' partition 0 offset 1 with format '{FMT}': .*{error}"):
        rows_of(spark, opts, schema)
    skip = registry_options(opts, registry_url, {f"value.{FMT}.ignore-parse-errors": "true"})
    assert rows_of(spark, skip, schema) == [(1001, "Sally", "sally@acme.com", "upsert")]
