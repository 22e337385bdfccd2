"""Schema evolution as registry users live it: confluent-kafka's own serializers write records of version 1, then
version 2, of a subject into one topic of the real broker, under the subject's compatibility rule on the real
registry; the connector reads both into the table's columns with the values Confluent's deserializers give (batch
and an AvailableNow stream across the change), names what it cannot read (subject, schema id, version, field and
both types), and its own writes reuse an equal registered schema."""

from __future__ import annotations

import json

import pytest
from confluent_kafka.schema_registry import ServerConfig
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.common.schema_registry_client import ConfigCompatibilityLevel
from confluent_kafka.serialization import MessageField, SerializationContext

from tests.formats.test_format_avro_confluent import avro_options, confluent_client
from tests.support.kafka_io import produce
from tests.support.read_helpers import Collector, run_available_now, start_collecting, wait_for


def compatibility(client, subject: str, level: str) -> None:
    """The subject's compatibility rule, set before its first version (Confluent's API: PUT /config/<subject>)."""
    client.set_config(subject, ServerConfig(compatibility=ConfigCompatibilityLevel(level)))


def across_the_change(df, checkpoint: str, produce_next) -> list[tuple]:
    """The rows a running stream (a processing-time trigger) reads: the records there, then those `produce_next()`
    adds while it runs, without a restart."""
    sink = Collector()
    query = start_collecting(df, checkpoint, sink)
    try:
        wait_for(lambda: sink.rows or query.exception(), "the first version's rows")
        first = len(sink.rows)
        produce_next()
        wait_for(lambda: len(sink.rows) > first or query.exception(), "the next version's rows")
        assert query.exception() is None, query.exception()
    finally:
        query.stop()
    return sink.rows


def avro_record(name: str, *fields: dict) -> dict:
    return {"type": "record", "name": name, "namespace": "shop", "fields": list(fields)}


ID = {"name": "id", "type": "int"}
NAME = {"name": "name", "type": "string"}
V1 = avro_record("Item", ID, NAME)
# v2 adds a NOT NULL field with a default: BACKWARD (and FULL) compatible.
V2_TIER = avro_record("Item", ID, NAME, {"name": "tier", "type": "string", "default": "basic"})


def produce_avro(bootstrap: str, topic: str, client, versions: list[tuple[dict, list[dict]]]) -> None:
    """Each (schema, values) written by Confluent's AvroSerializer (registering the schema), keyed by id as JSON."""
    records = []
    for schema, values in versions:
        serialize = AvroSerializer(client, json.dumps(schema))
        for v in values:
            records.append((json.dumps({"id": v["id"]}).encode(), serialize(v, _value(topic))))
    produce(bootstrap, topic, records)


def _value(topic: str) -> SerializationContext:
    return SerializationContext(topic, MessageField.VALUE)


def confluent_reads(client, topic: str, bootstrap: str, reader: dict) -> list[dict]:
    """What Confluent's AvroDeserializer gives for every record of the topic, reading with `reader`."""
    from tests.support.kafka_io import consume_all

    deserialize = AvroDeserializer(client, json.dumps(reader))
    return [deserialize(v, _value(topic)) for *_, v in consume_all(bootstrap, topic)]


@pytest.mark.parametrize("level", ["BACKWARD", "FULL"])
def test_avro_columns_from_the_registry_read_an_added_field_as_its_default_as_confluents_deserializer_does(
    spark, new_topic, options, bootstrap, registry_url, level
):
    topic = new_topic()
    client = confluent_client(registry_url)
    compatibility(client, f"{topic}-value", level)
    produce_avro(
        bootstrap,
        topic,
        client,
        [(V1, [{"id": 1, "name": "old"}]), (V2_TIER, [{"id": 2, "name": "new", "tier": "gold"}])],
    )

    opts = avro_options(options(topic, {"read.mode": "table"}), registry_url, roles=("value",))
    df = spark.read.format("upsert-kafka").options(**opts).load()  # no .schema(...): the subject's latest

    assert df.schema.simpleString() == "struct<id:int,name:string,tier:string>"
    rows = sorted(tuple(r) for r in df.collect())
    assert rows == [(1, "old", "basic"), (2, "new", "gold")]
    assert sorted(tuple(r.values()) for r in confluent_reads(client, topic, bootstrap, V2_TIER)) == rows


def test_avro_a_field_a_writer_lacks_that_the_latest_holds_not_null_without_default_is_refused_at_start_naming_it(
    spark, new_topic, options, bootstrap, registry_url
):
    # FORWARD: v2 may add a field without a default (v1's readers ignore it); v1's records cannot give it.
    topic = new_topic()
    client = confluent_client(registry_url)
    compatibility(client, f"{topic}-value", "FORWARD")
    v2 = avro_record("Item", ID, NAME, {"name": "stock", "type": "int"})
    produce_avro(
        bootstrap, topic, client, [(V1, [{"id": 1, "name": "old"}]), (v2, [{"id": 2, "name": "new", "stock": 3}])]
    )
    v1_id = client.get_version(f"{topic}-value", 1).schema_id
    opts = avro_options(options(topic, {"read.mode": "table"}), registry_url, roles=("value",))
    from pyspark_upsert_kafka.formats import CodecContext, FormatOptionError, make_codec

    # Refused when the read is planned, on the driver (before any task), naming the field, the writer version and
    # what to change.
    codec = make_codec("avro-confluent", "value.format", {"url": registry_url}, CodecContext("value", (topic,)))
    named = (
        rf"the table reads 'stock' \(a field of record 'shop\.Item'\) NOT NULL without a default, which the "
        rf"registered writer schema id {v1_id} \(subject '{topic}-value' version 1\) lacks.*nullable \(option 'schema'"
    )
    with pytest.raises(FormatOptionError, match=named):
        codec.prime_reader(codec.inferred_schema())
    with pytest.raises(Exception, match=rf"option 'value\.format' \(avro-confluent\): {named}") as failed:
        spark.read.format("upsert-kafka").options(**opts).load().collect()
    assert "Task" not in str(failed.value), "refused in a task, not when the query starts"

    # With the column nullable, the v1 record reads it as null (Spark's meaning of a value the writer lacks).
    given = "id INT, name STRING, stock INT"
    rows = spark.read.format("upsert-kafka").options(**opts).schema(given).load().collect()
    assert sorted(map(tuple, rows)) == [(1, "old", None), (2, "new", 3)]


def test_avro_a_version_registered_after_a_stream_started_that_lacks_a_not_null_column_fails_its_records(
    spark, new_topic, options, bootstrap, registry_url, tmp_path
):
    # BACKWARD: v2 may drop a field without a default. The running stream's columns (v1's) hold it NOT NULL, which
    # its start could not check against a version not registered yet: v2's record fails as it comes, naming it.
    topic = new_topic()
    client = confluent_client(registry_url)
    compatibility(client, f"{topic}-value", "BACKWARD")
    v1 = avro_record("Item", ID, NAME, {"name": "stock", "type": "int"})
    produce_avro(bootstrap, topic, client, [(v1, [{"id": 1, "name": "old", "stock": 3}])])
    opts = avro_options(options(topic), registry_url, roles=("value",))
    sink = Collector()
    query = start_collecting(spark.readStream.format("upsert-kafka").options(**opts).load(), str(tmp_path), sink)
    try:
        wait_for(lambda: sink.rows or query.exception(), "the first version's rows")
        assert sink.rows == [(1, "old", 3, "upsert")]
        produce_avro(bootstrap, topic, client, [(V1, [{"id": 2, "name": "new"}])])
        wait_for(lambda: query.exception() is not None, "the query to fail on the next version's record")
    finally:
        query.stop()
    v2_id = client.get_version(f"{topic}-value", 2).schema_id
    failed = str(query.exception())
    assert f"writer schema id {v2_id} (subject '{topic}-value' version 2)" in failed
    assert "field 'stock': the writer's record 'shop.Item' has none" in failed


def test_avro_a_field_whose_type_changed_fails_naming_subject_schema_id_version_field_and_both_types(
    spark, new_topic, options, bootstrap, registry_url
):
    topic = new_topic()
    client = confluent_client(registry_url)
    compatibility(client, f"{topic}-value", "NONE")
    v2 = avro_record("Item", ID, {"name": "name", "type": "int"})
    produce_avro(bootstrap, topic, client, [(V1, [{"id": 1, "name": "old"}]), (v2, [{"id": 2, "name": 7}])])
    v2_id = client.get_version(f"{topic}-value", 2).schema_id
    opts = avro_options(options(topic), registry_url, roles=("value",))

    with pytest.raises(
        Exception, match=r"field 'name': the writer writes int, the table reads \['null', 'string'\]"
    ) as e:
        spark.read.format("upsert-kafka").options(**opts).schema("id INT, name STRING").load().collect()
    assert f"writer schema id {v2_id} (subject '{topic}-value' version 2)" in str(e.value)


def test_avro_stream_reads_a_new_writer_versions_records_without_restart_and_its_columns_at_the_next_start(
    spark, new_topic, options, bootstrap, registry_url, tmp_path
):
    topic = new_topic()
    client = confluent_client(registry_url)
    compatibility(client, f"{topic}-value", "BACKWARD")
    produce_avro(bootstrap, topic, client, [(V1, [{"id": 1, "name": "old"}])])
    opts = avro_options(options(topic), registry_url, roles=("value",))
    running = spark.readStream.format("upsert-kafka").options(**opts).load()  # v1's columns

    def v2() -> None:
        produce_avro(bootstrap, topic, client, [(V2_TIER, [{"id": 2, "name": "new", "tier": "gold"}])])

    # v2's record fits the running query's columns (its new field is left out).
    assert across_the_change(running, str(tmp_path / "a"), v2) == [(1, "old", "upsert"), (2, "new", "upsert")]
    # Started again, the columns come from v2, and v1's record reads the new field's default.
    restarted = spark.readStream.format("upsert-kafka").options(**opts).load()
    rows = run_available_now(restarted, str(tmp_path / "b")).rows
    assert sorted(rows) == [(1, "old", "basic", "upsert"), (2, "new", "gold", "upsert")]


def test_avro_defaults_of_a_union_led_by_its_value_read_and_those_of_logical_types_are_refused_not_misread():
    import io

    import pyarrow as pa
    from fastavro import parse_schema, schemaless_writer
    from pyspark_upsert_kafka.formats.avro.codec import AvroBodyReader
    from pyspark_upsert_kafka.formats.avro.resolution import SchemaMismatch
    from pyspark_upsert_kafka.formats.payloads import Layout

    writer = avro_record("Item", ID)
    source = avro_record(
        "Item",
        ID,
        {"name": "n", "type": ["long", "null"], "default": 7},
        {"name": "other", "type": "string", "default": "x"},  # STRING here, INT in the table: not its default
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}, "default": "B"},
    )
    table = pa.schema(
        [pa.field("id", pa.int32(), nullable=False), ("n", pa.int64()), ("other", pa.int32()), ("kind", pa.string())]
    )
    body = io.BytesIO()
    schemaless_writer(body, parse_schema(writer), {"id": 1})
    payloads = [body.getvalue()]
    batch, failed = AvroBodyReader(writer, table, source=source).decode(payloads, Layout.of(payloads), None, 0)
    assert failed == {}
    assert batch.to_pylist() == [{"id": 1, "n": 7, "other": None, "kind": "B"}]

    # fastavro gives a logical type's default as the JSON holds it (here millis), which a TIMESTAMP column would
    # take as microseconds: refused, naming the field.
    at = {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}, "default": 1_500}
    with pytest.raises(SchemaMismatch, match=r"field 'at': the writer's record 'shop\.Item' has none.*default 1500"):
        AvroBodyReader(
            writer,
            pa.schema([("id", pa.int32()), ("at", pa.timestamp("us", "UTC"))]),
            source=avro_record("Item", ID, at),
        )


# -- protobuf-confluent ---------------------------------------------------------------------------------------------


def item_class(
    *fields: tuple[str, int, int], optional: tuple[str, ...] = (), retired: tuple[str, int] | None = None
) -> type:
    """A proto3 message `shop.Item` of (name, number, type) fields (`optional`: with presence; `retired`: a field's
    name and number reserved), as protoc gives it."""
    from google.protobuf import descriptor_pb2
    from pyspark_upsert_kafka.formats.protobuf.schema import message_class, pool_of

    file = descriptor_pb2.FileDescriptorProto(name="shop/item.proto", package="shop", syntax="proto3")
    message = file.message_type.add(name="Item")
    for name, number, kind in fields:
        field = message.field.add(name=name, number=number, type=kind, label=1, json_name=name)
        if name in optional:
            field.proto3_optional = True
            field.oneof_index = len(message.oneof_decl)
            message.oneof_decl.add(name=f"_{name}")
    if retired is not None:
        message.reserved_name.append(retired[0])
        message.reserved_range.add(start=retired[1], end=retired[1] + 1)
    return message_class(pool_of([file]).FindMessageTypeByName("shop.Item"))


INT32, STRING = 5, 9
PROTO_ID, PROTO_NAME = ("id", 1, INT32), ("name", 2, STRING)
ITEM_V1 = (PROTO_ID, PROTO_NAME, ("qty", 3, INT32))
# v2 retires field 3 (qty, reserved) and adds stock: BACKWARD compatible. (Confluent's rules take it under FORWARD and
# FULL too; Apicurio's refuse an added field there, so those run on avro only.)
ITEM_V2 = (PROTO_ID, PROTO_NAME, ("stock", 4, INT32))
RETIRED = ("qty", 3)


def produce_protobuf(bootstrap: str, topic: str, client, versions: list[tuple[type, list[dict]]]) -> None:
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer

    records = []
    for message, values in versions:
        serialize = ProtobufSerializer(message, client, {"use.deprecated.format": False})
        records += [(json.dumps({"id": v["id"]}).encode(), serialize(message(**v), _value(topic))) for v in values]
    produce(bootstrap, topic, records)


def protobuf_options(opts: dict, url: str, **more: str) -> dict:
    return opts | {"value.format": "protobuf-confluent", "value.protobuf-confluent.url": url} | more


def test_protobuf_columns_resolve_against_the_latest_message_across_an_added_and_a_retired_field(
    spark, new_topic, options, bootstrap, registry_url
):
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer

    topic = new_topic()
    client = confluent_client(registry_url)
    compatibility(client, f"{topic}-value", "BACKWARD")
    v1, v2 = item_class(*ITEM_V1), item_class(*ITEM_V2, retired=RETIRED)
    produce_protobuf(
        bootstrap,
        topic,
        client,
        [(v1, [{"id": 1, "name": "old", "qty": 5}]), (v2, [{"id": 2, "name": "new", "stock": 3}])],
    )
    opts = protobuf_options(options(topic, {"read.mode": "table"}), registry_url)

    for given in (None, "id INT, name STRING, stock INT"):  # columns from the latest message, and given
        read = spark.read.format("upsert-kafka").options(**opts)
        rows = sorted(tuple(r) for r in (read if given is None else read.schema(given)).load().collect())
        # v1's record lacks stock: proto3's default, as Confluent's deserializer with v2's class gives it.
        assert rows == [(1, "old", 0), (2, "new", 3)], given
    deserialize = ProtobufDeserializer(v2, {"use.deprecated.format": False})
    from tests.support.kafka_io import consume_all

    theirs = [deserialize(v, _value(topic)) for *_, v in consume_all(bootstrap, topic)]
    assert [(m.id, m.name, m.stock) for m in theirs] == rows

    # A column of a field the reader's message retired is refused, naming it.
    with pytest.raises(Exception, match=r"column 'qty' is not a field of protobuf message 'shop\.Item'"):
        spark.read.format("upsert-kafka").options(**opts).schema("id INT, name STRING, qty INT").load().collect()


def test_protobuf_stream_reads_the_next_versions_records_into_its_columns_without_restart(
    spark, new_topic, options, bootstrap, registry_url, tmp_path
):
    topic = new_topic()
    client = confluent_client(registry_url)
    compatibility(client, f"{topic}-value", "BACKWARD")
    produce_protobuf(bootstrap, topic, client, [(item_class(*ITEM_V1), [{"id": 1, "name": "old", "qty": 5}])])
    opts = protobuf_options(options(topic), registry_url)
    running = spark.readStream.format("upsert-kafka").options(**opts).load()  # v1's columns: id, name, qty
    v2 = item_class(*ITEM_V2, retired=RETIRED)

    def next_version() -> None:
        produce_protobuf(bootstrap, topic, client, [(v2, [{"id": 2, "name": "new", "stock": 3}])])

    # v2's record read against v1's message (the view the query started with): qty absent, proto3's 0.
    rows = across_the_change(running, str(tmp_path / "a"), next_version)
    assert rows == [(1, "old", 5, "upsert"), (2, "new", 0, "upsert")]
    restarted = spark.readStream.format("upsert-kafka").options(**opts).load()  # v2's columns
    rows = run_available_now(restarted, str(tmp_path / "b")).rows
    assert sorted(rows) == [(1, "old", 0, "upsert"), (2, "new", 3, "upsert")]


@pytest.mark.parametrize("read_defaults", [False, True])
def test_protobuf_an_optional_field_a_writer_lacks_reads_null_or_its_default_as_read_default_values_says(
    spark, new_topic, options, bootstrap, registry_url, read_defaults
):
    topic = new_topic()
    client = confluent_client(registry_url)
    compatibility(client, f"{topic}-value", "BACKWARD")
    v2 = item_class(*ITEM_V2, optional=("stock",), retired=RETIRED)
    produce_protobuf(
        bootstrap,
        topic,
        client,
        [(item_class(*ITEM_V1), [{"id": 1, "name": "old", "qty": 5}]), (v2, [{"id": 2, "name": "new", "stock": 0}])],
    )
    more = {"value.protobuf-confluent.read-default-values": str(read_defaults).lower()}
    opts = protobuf_options(options(topic, {"read.mode": "table"}), registry_url, **more)

    rows = sorted(tuple(r) for r in spark.read.format("upsert-kafka").options(**opts).load().collect())

    assert rows == [(1, "old", 0 if read_defaults else None), (2, "new", 0)]


def test_protobuf_a_field_whose_type_changed_fails_naming_subject_schema_id_version_field_and_both_types(
    spark, new_topic, options, bootstrap, registry_url
):
    topic = new_topic()
    client = confluent_client(registry_url)
    compatibility(client, f"{topic}-value", "NONE")
    v1, v2 = item_class(*ITEM_V1), item_class(PROTO_ID, ("name", 2, INT32))
    produce_protobuf(bootstrap, topic, client, [(v1, [{"id": 1, "name": "old"}]), (v2, [{"id": 2, "name": 7}])])
    v1_id = client.get_version(f"{topic}-value", 1).schema_id
    opts = protobuf_options(options(topic, {"read.mode": "table"}), registry_url)

    with pytest.raises(
        Exception,
        match=r"protobuf field 'shop\.Item\.name' \(string\) cannot be read or written exactly as a column of type "
        r"int32",
    ) as e:
        spark.read.format("upsert-kafka").options(**opts).load().collect()  # columns of v2: name INT
    assert f"writer schema id {v1_id} (subject '{topic}-value' version 1)" in str(e.value)


# -- json-confluent -------------------------------------------------------------------------------------------------


def json_object(**properties: dict) -> dict:
    """A closed content model (no other properties): the one where an added optional property is BACKWARD compatible
    (in an open one, any value was allowed under the new name before)."""
    return {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Item", "type": "object",
            "properties": properties, "required": ["id"], "additionalProperties": False}  # fmt: skip


def produce_json(bootstrap: str, topic: str, client, versions: list[tuple[dict, list[dict]]]) -> None:
    from confluent_kafka.schema_registry.json_schema import JSONSerializer

    records = []
    for schema, values in versions:
        serialize = JSONSerializer(json.dumps(schema), client, conf={"auto.register.schemas": True})
        records += [(json.dumps({"id": v["id"]}).encode(), serialize(v, _value(topic))) for v in values]
    produce(bootstrap, topic, records)


def json_options(opts: dict, url: str) -> dict:
    return opts | {"value.format": "json-confluent", "value.json-confluent.url": url}


def test_json_a_property_added_reads_null_where_the_writer_lacks_it(spark, new_topic, options, bootstrap, registry_url):
    topic = new_topic()
    client = confluent_client(registry_url)
    compatibility(client, f"{topic}-value", "BACKWARD")
    v1 = json_object(id={"type": "integer"}, name={"type": "string"})
    v2 = json_object(id={"type": "integer"}, name={"type": "string"}, tier={"type": "string"})
    produce_json(
        bootstrap, topic, client, [(v1, [{"id": 1, "name": "old"}]), (v2, [{"id": 2, "name": "new", "tier": "gold"}])]
    )
    opts = json_options(options(topic, {"read.mode": "table"}), registry_url)

    rows = spark.read.format("upsert-kafka").options(**opts).schema("id BIGINT, name STRING, tier STRING").load()

    assert sorted(map(tuple, rows.collect())) == [(1, "old", None), (2, "new", "gold")]


def test_json_a_property_whose_type_changed_fails_naming_subject_schema_id_version_and_the_field(
    spark, new_topic, options, bootstrap, registry_url
):
    topic = new_topic()
    client = confluent_client(registry_url)
    compatibility(client, f"{topic}-value", "NONE")
    v1 = json_object(id={"type": "integer"}, qty={"type": "string"})
    v2 = json_object(id={"type": "integer"}, qty={"type": "integer"})
    produce_json(bootstrap, topic, client, [(v1, [{"id": 1, "qty": "five"}]), (v2, [{"id": 2, "qty": 5}])])
    v1_id = client.get_version(f"{topic}-value", 1).schema_id
    opts = json_options(options(topic, {"read.mode": "table"}), registry_url)

    named = rf"writer schema id {v1_id} \(subject '{topic}-value' version 1\)"
    with pytest.raises(Exception, match=rf"{named}: field 'qty': expected an integer, got \"five\""):
        spark.read.format("upsert-kafka").options(**opts).schema("id BIGINT, qty BIGINT").load().collect()


# -- writes that reuse a registered schema --------------------------------------------------------------------------


def test_protobuf_a_write_reuses_the_id_of_the_message_confluents_serializer_registered(
    spark, new_topic, options, bootstrap, registry_url, tmp_path
):
    from google.protobuf import descriptor_pb2

    from tests.support.kafka_io import consume_all

    topic = new_topic()
    client = confluent_client(registry_url)
    item = item_class(*ITEM_V2)  # every field's json_name set, as some generators give it
    produce_protobuf(bootstrap, topic, client, [(item, [{"id": 1, "name": "theirs", "stock": 2}])])
    descriptors = tmp_path / "item.desc"
    file = descriptor_pb2.FileDescriptorProto.FromString(item.DESCRIPTOR.file.serialized_pb)
    descriptors.write_bytes(descriptor_pb2.FileDescriptorSet(file=[file]).SerializeToString())
    more = {"value.protobuf-confluent.message-class-name": "shop.Item",
            "value.protobuf-confluent.descriptor-file": str(descriptors)}  # fmt: skip
    opts = protobuf_options(options(topic), registry_url, **more)

    rows = spark.createDataFrame([(3, "ours", 4)], "id INT, name STRING, stock INT")
    rows.coalesce(1).write.format("upsert-kafka").options(**opts).mode("append").save()

    assert client.get_versions(f"{topic}-value") == [1], "no second version of the same message"
    registered = client.get_version(f"{topic}-value", 1).schema_id
    assert [int.from_bytes(v[1:5], "big") for *_, v in consume_all(bootstrap, topic)] == [registered] * 2


# -- key schema changes ---------------------------------------------------------------------------------------------


def test_keys_of_two_key_schema_versions_that_decode_alike_are_one_key(
    spark, new_topic, options, bootstrap, registry_url
):
    topic = new_topic()
    client = confluent_client(registry_url)
    compatibility(client, f"{topic}-key", "BACKWARD")
    key_v1 = avro_record("ItemKey", ID)
    key_v2 = avro_record("ItemKey", ID, {"name": "region", "type": "string", "default": "eu"})
    keys = SerializationContext(topic, MessageField.KEY)
    old = AvroSerializer(client, json.dumps(key_v1))
    new = AvroSerializer(client, json.dumps(key_v2))
    produce(
        bootstrap,
        topic,
        [
            (old({"id": 1}, keys), b'{"name": "v1 key"}'),
            (new({"id": 1, "region": "eu"}, keys), b'{"name": "v2 key, eu"}'),
            (new({"id": 1, "region": "us"}, keys), b'{"name": "v2 key, us"}'),
        ],
    )
    opts = avro_options(options(topic, {"read.mode": "table", "value.fields-include": "EXCEPT_KEY"}), registry_url,
                        roles=("key",))  # fmt: skip

    def table(key_fields: str, columns: str) -> list[tuple]:
        read = spark.read.format("upsert-kafka").options(**{**opts, "key.fields": key_fields}).schema(columns).load()
        return sorted(map(tuple, read.collect()))

    # Keyed by id alone: the three keys decode to id 1, one key; the latest record is its row.
    assert table("id", "id INT, name STRING") == [(1, "v2 key, us")]
    # Keyed by id and region: v1's key reads region's default ("eu"), the same key as v2's eu key.
    assert table("id;region", "id INT, region STRING, name STRING") == [
        (1, "eu", "v2 key, eu"),
        (1, "us", "v2 key, us"),
    ]


def test_a_key_column_a_key_version_lacks_without_a_default_is_refused_when_the_read_starts(
    spark, new_topic, options, bootstrap, registry_url
):
    topic = new_topic()
    client = confluent_client(registry_url)
    compatibility(client, f"{topic}-key", "FORWARD")
    keys = SerializationContext(topic, MessageField.KEY)
    old = AvroSerializer(client, json.dumps(avro_record("ItemKey", ID)))
    new = AvroSerializer(client, json.dumps(avro_record("ItemKey", ID, {"name": "region", "type": "string"})))
    produce(bootstrap, topic, [(old({"id": 1}, keys), b'{"name": "v1"}'),
                               (new({"id": 2, "region": "us"}, keys), b'{"name": "v2"}')])  # fmt: skip
    v1_id = client.get_version(f"{topic}-key", 1).schema_id
    opts = avro_options(options(topic, {"read.mode": "table", "value.fields-include": "EXCEPT_KEY",
                                        "key.fields": "id;region"}), registry_url, roles=("key",))  # fmt: skip

    read = spark.read.format("upsert-kafka").options(**opts).schema("id INT, region STRING, name STRING").load()
    with pytest.raises(Exception, match=rf"option 'key\.format' \(avro-confluent\): the table reads 'region' .*"
                       rf"writer schema id {v1_id} \(subject '{topic}-key' version 1\) lacks"):  # fmt: skip
        read.collect()


def test_avro_topics_whose_latest_schemas_give_a_column_different_defaults_are_refused_naming_the_subjects(
    registry_url,
):
    import uuid

    import pyarrow as pa
    from confluent_kafka.schema_registry import Schema
    from pyspark_upsert_kafka.formats import CodecContext, FormatOptionError, make_codec

    client = confluent_client(registry_url)
    topics = (f"gold-{uuid.uuid4().hex}", f"silver-{uuid.uuid4().hex}")
    for topic, tier in zip(topics, ("gold", "silver")):
        schema = avro_record("Item", ID, {"name": "tier", "type": "string", "default": tier})
        client.register_schema(f"{topic}-value", Schema(json.dumps(schema), "AVRO"))
    codec = make_codec("avro-confluent", "value.format", {"url": registry_url}, CodecContext("value", topics))

    columns = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("tier", pa.string(), nullable=False)])
    with pytest.raises(FormatOptionError, match=rf"the subjects {topics[0]}-value and {topics[1]}-value hold "
                       r"different defaults of the table's columns.*'value\.avro-confluent\.subject'"):  # fmt: skip
        codec.prime_reader(columns)  # on the driver, when the read is planned
