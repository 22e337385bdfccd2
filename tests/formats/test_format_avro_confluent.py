"""avro-confluent against the real schema registry: wire compatibility both ways with confluent-kafka's own
AvroSerializer / AvroDeserializer, subjects, the table schema from the registry, schema evolution on read,
per-process caching, and the registry's TLS settings and credentials in its URL (through a gate in front of the real
registry, which sees the Authorization header on the wire); basic-auth user info and bearer tokens against a registry
that checks them itself are tests/security/test_registry_credentials.py's."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from decimal import Decimal

import pyarrow as pa
import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from pyspark_upsert_kafka.errors import OptionError
from pyspark_upsert_kafka.formats import CodecContext, FormatOptionError, make_codec
from pyspark_upsert_kafka.formats.confluent.registry import RegistryError
from pyspark_upsert_kafka.formats.confluent.wire import HEADER
from pyspark_upsert_kafka.options.layout import schema_ddl

from tests.support.kafka_io import consume_all, produce

UTC = dt.timezone.utc
ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "int"},
        {"name": "name", "type": ["null", "string"], "default": None},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "local", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attrs", "type": {"type": "map", "values": ["null", "long"]}},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["BOOK", "GAME"]}},
        {"name": "ship", "type": ["null", {"type": "record", "name": "Ship", "fields": [
            {"name": "city", "type": "string"}]}]},
    ],
}  # fmt: skip
ORDER_KEY = {"type": "record", "name": "OrderKey", "namespace": "shop", "fields": [{"name": "id", "type": "int"}]}


def confluent_client(url: str) -> SchemaRegistryClient:
    # Its default is no timeout: a request the registry never answers (seen once on a loaded machine) would hang
    # the suite; with one, the client retries it.
    return SchemaRegistryClient({"url": url, "timeout": 20})


def avro_options(opts: dict, url: str, roles: tuple[str, ...] = ("key", "value")) -> dict:
    for role in roles:
        opts[f"{role}.format"] = "avro-confluent"
        opts[f"{role}.avro-confluent.url"] = url
    return opts


def test_records_of_confluents_serializer_read_with_the_schema_from_the_subject(
    spark, new_topic, options, bootstrap, registry_url
):
    topic = new_topic()
    client = confluent_client(registry_url)
    keys = AvroSerializer(client, json.dumps(ORDER_KEY))
    values = AvroSerializer(client, json.dumps(ORDER))
    at = dt.datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=UTC)
    order = {
        "id": 1, "name": "dune", "price": Decimal("12.50"), "day": dt.date(2024, 5, 6), "at": at,
        "local": dt.datetime(2024, 5, 6, 9, 8, 9, 123456), "tags": ["sf", "classic"],
        "attrs": {"pages": 412, "x": None}, "kind": "BOOK", "ship": {"city": "Zürich"},
    }  # fmt: skip
    bare = {**order, "id": 2, "name": None, "tags": [], "attrs": {}, "kind": "GAME", "ship": None}

    def record(value: dict) -> tuple[bytes, bytes]:
        return (
            keys({"id": value["id"]}, SerializationContext(topic, MessageField.KEY)),
            values(value, SerializationContext(topic, MessageField.VALUE)),
        )

    produce(bootstrap, topic, [record(order), record(bare)])

    # No .schema(...): the columns come from the subjects <topic>-key and <topic>-value.
    opts = avro_options(options(topic, {"read.mode": "table"}), registry_url)
    df = spark.read.format("upsert-kafka").options(**opts).load()

    assert df.schema.simpleString() == (
        "struct<id:int,name:string,price:decimal(10,2),day:date,at:timestamp,local:timestamp_ntz,"
        "tags:array<string>,attrs:map<string,bigint>,kind:string,ship:struct<city:string>>"
    )
    rows = sorted(df.collect())
    assert [r.asDict(recursive=True) for r in rows] == [
        {**order, "at": at.replace(tzinfo=None), "ship": {"city": "Zürich"}},
        {**bare, "at": at.replace(tzinfo=None)},
    ]


def test_records_written_by_spark_are_read_by_confluents_deserializer(
    spark, new_topic, options, bootstrap, registry_url
):
    topic = new_topic()
    schema = (
        "id INT, name STRING, price DECIMAL(10,2), day DATE, at TIMESTAMP, local TIMESTAMP_NTZ, tags ARRAY<STRING>, "
        "attrs MAP<STRING, BIGINT>, ship STRUCT<city: STRING, zip: INT>"
    )
    at = dt.datetime(2024, 5, 6, 7, 8, 9, 123456)
    rows = [
        (1, "dune", Decimal("12.50"), dt.date(2024, 5, 6), at, at, ["a", None], {"p": 1, "q": None}, ("Bern", 3000)),
        (2, None, None, None, None, None, None, None, None),
    ]
    opts = avro_options(options(topic), registry_url)
    spark.createDataFrame(rows, schema).coalesce(1).write.format("upsert-kafka").options(**opts).mode("append").save()

    client = confluent_client(registry_url)
    deserialize = AvroDeserializer(client)
    records = consume_all(bootstrap, topic)
    keys = [deserialize(k, SerializationContext(topic, MessageField.KEY)) for *_, k, _ in records]
    values = [deserialize(v, SerializationContext(topic, MessageField.VALUE)) for *_, v in records]

    assert keys == [{"id": 1}, {"id": 2}]
    assert values[0] == {
        "id": 1, "name": "dune", "price": Decimal("12.50"), "day": dt.date(2024, 5, 6), "at": at.replace(tzinfo=UTC),
        "local": at, "tags": ["a", None], "attrs": {"p": 1, "q": None}, "ship": {"city": "Bern", "zip": 3000},
    }  # fmt: skip
    assert values[1] == {"id": 2, **dict.fromkeys(["name", "price", "day", "at", "local", "tags", "attrs", "ship"])}
    # The header names the id the registry holds as the latest schema of the default subject <topic>-value.
    latest = client.get_latest_version(f"{topic}-value")
    assert all(v[0] == 0 and int.from_bytes(v[1:5], "big") == latest.schema_id for *_, v in records)


def test_records_written_with_older_and_newer_schemas_resolve_to_the_tables_columns(
    spark, new_topic, options, bootstrap, registry_url
):
    topic = new_topic()
    client = confluent_client(registry_url)
    fields = [{"name": "id", "type": "int"}, {"name": "name", "type": "string"}]
    v1 = {"type": "record", "name": "User", "fields": fields}
    v2 = {
        "type": "record",
        "name": "User",
        "fields": [*v1["fields"], {"name": "score", "type": ["null", "double"], "default": None}],
    }
    old = AvroSerializer(client, json.dumps(v1))(
        {"id": 1, "name": "old"}, SerializationContext(topic, MessageField.VALUE)
    )
    new = AvroSerializer(client, json.dumps(v2))(
        {"id": 2, "name": "new", "score": 0.5}, SerializationContext(topic, MessageField.VALUE)
    )
    assert old[1:5] != new[1:5], "two schema ids"
    produce(bootstrap, topic, [(b'{"id":1}', old), (b'{"id":2}', new)])

    opts = avro_options(options(topic), registry_url, roles=("value",))
    rows = spark.read.format("upsert-kafka").options(**opts).schema("id INT, name STRING, score DOUBLE").load()

    assert sorted(map(tuple, rows.collect())) == [(1, "old", None), (2, "new", 0.5)]


def test_write_to_a_topic_list_registers_the_schema_under_each_topics_subject(
    spark, new_topic, options, bootstrap, registry_url
):
    first, second = new_topic(), new_topic()
    opts = avro_options(options(f"{first};{second}", {"metadata.columns": "topic"}), registry_url)
    df = spark.createDataFrame([(1, "a", first), (2, "b", second)], "id INT, name STRING, topic STRING")

    df.write.format("upsert-kafka").options(**opts).mode("append").save()

    client = confluent_client(registry_url)
    for topic in (first, second):
        assert client.get_latest_version(f"{topic}-value").schema.schema_str
        assert client.get_latest_version(f"{topic}-key").schema.schema_str
        assert len(consume_all(bootstrap, topic)) == 1
    read = spark.read.format("upsert-kafka").options(**avro_options(options(first), registry_url))
    assert [tuple(r) for r in read.schema("id INT, name STRING").load().collect()] == [(1, "a")]


def test_read_of_a_topic_list_takes_its_columns_from_each_topics_own_subject(
    spark, new_topic, options, bootstrap, registry_url
):
    first, second = new_topic(), new_topic()
    opts = avro_options(options(f"{first};{second}", {"metadata.columns": "topic"}), registry_url)
    df = spark.createDataFrame([(1, "a", first), (2, "b", second)], "id INT, name STRING, topic STRING")
    df.write.format("upsert-kafka").options(**opts).mode("append").save()

    # No .schema(...): the columns come from <topic>-key / <topic>-value of each topic (never '<a;b>-value').
    read = spark.read.format("upsert-kafka").options(**{**opts, "read.mode": "table"}).load()

    assert read.schema.simpleString() == "struct<id:int,name:string,topic:string>"
    assert sorted(tuple(r) for r in read.collect()) == [(1, "a", first), (2, "b", second)]


def test_topic_list_whose_subjects_disagree_fails_naming_the_subject_option(new_topic, options, registry_url):
    first, second = new_topic(), new_topic()
    client = confluent_client(registry_url)
    for topic, fields in ((first, [("id", "int")]), (second, [("id", "int"), ("name", "string")])):
        record = {"type": "record", "name": "R", "fields": [{"name": n, "type": t} for n, t in fields]}
        client.register_schema(f"{topic}-value", Schema(json.dumps(record), "AVRO"))
    opts = avro_options(options(f"{first};{second}"), registry_url, roles=("value",))

    with pytest.raises(OptionError, match=r"different latest schemas.*'value\.avro-confluent\.subject'"):
        schema_ddl(opts)
    one = schema_ddl({**opts, "value.avro-confluent.subject": f"{second}-value"})
    assert one.startswith("`id` int NOT NULL, `name` string NOT NULL")


def test_a_record_naming_a_schema_id_the_registry_does_not_have_is_a_bad_record(registry_url):
    written = codec(registry_url)
    good = written.encoder(SCHEMA).encode(BATCH)
    unknown = b"\x00" + (2**31 - 7).to_bytes(4, "big") + good[0][HEADER:]
    decoder = make_codec("avro-confluent", "value.format", {"url": registry_url}, VALUE_CTX).decoder(SCHEMA)

    decoded = decoder.decode([good[0], unknown, good[1], unknown])

    assert decoded.batch.to_pylist() == BATCH.to_pylist()
    assert [i for i, _ in decoded.failures] == [1, 3]
    assert "id 2147483641" in decoded.failures[0][1] and "HTTP 404" in decoded.failures[0][1]


def test_a_registry_url_that_is_not_the_registry_api_fails_the_task_not_the_records(registry_url):
    base = registry_url.partition("/apis/")[0]
    written = codec(registry_url).encoder(SCHEMA).encode(BATCH)
    decoder = make_codec("avro-confluent", "value.format", {"url": base + "/nothing-here"}, VALUE_CTX)
    with pytest.raises(RegistryError, match="HTTP 404"):
        decoder.decoder(SCHEMA).decode(written)


def test_unknown_schema_id_fails_the_read_naming_the_record_and_is_skipped_on_request(
    spark, new_topic, options, bootstrap, registry_url
):
    topic = new_topic()
    opts = avro_options(options(topic, {"read.mode": "table"}), registry_url, roles=("value",))
    values = codec(registry_url).encoder(SCHEMA).encode(BATCH)
    unknown = b"\x00" + (2**31 - 5).to_bytes(4, "big") + values[0][HEADER:]
    produce(bootstrap, topic, [(b'{"id":1}', values[0]), (b'{"id":9}', unknown), (b'{"id":2}', values[1])])

    def read(more: dict) -> list[tuple]:
        df = spark.read.format("upsert-kafka").options(**opts, **more).schema("id INT, name STRING").load()
        return sorted(tuple(r) for r in df.collect())

    with pytest.raises(Exception) as err:
        read({})
    message = str(err.value)
    where = f"record at topic '{topic}' partition 0 offset 1 with format 'avro-confluent'"
    assert f"cannot decode the value of the {where}" in message
    assert "id 2147483643" in message
    assert "set 'value.avro-confluent.ignore-parse-errors' to true" in message
    assert read({"value.avro-confluent.ignore-parse-errors": "true"}) == [(1, "a"), (2, None)]


def test_write_with_a_topic_pattern_and_no_subject_names_the_subject_option():
    codec = make_codec("avro-confluent", "value.format", {"url": "http://r:8081"}, CodecContext("value", ()))
    with pytest.raises(FormatOptionError, match=r"option 'value\.avro-confluent\.subject' is required"):
        codec.encoder(pa.schema([("id", pa.int32())]))


def test_url_is_required_and_named():
    with pytest.raises(FormatOptionError, match=r"option 'key\.avro-confluent\.url' is required"):
        make_codec("avro-confluent", "key.format", {}, CodecContext("key", ("t",)))


# -- codec level, through the real registry: caching, auth, TLS --------------------------------------

SCHEMA = pa.schema([("id", pa.int32()), ("name", pa.string())])
BATCH = pa.RecordBatch.from_pylist([{"id": 1, "name": "a"}, {"id": 2, "name": None}], schema=SCHEMA)


def codec(url: str, **options: str):
    subject = f"codec-{uuid.uuid4().hex}"
    return make_codec("avro-confluent", "value.format", {"url": url, "subject": subject, **options}, VALUE_CTX)


VALUE_CTX = CodecContext("value", ("t",))


def test_schema_ids_and_schemas_are_fetched_once_per_process(registry_gate):
    writer_gate, reader_gate = registry_gate(), registry_gate()
    written = codec(writer_gate.url)
    payloads = [written.encoder(SCHEMA).encode(BATCH) for _ in range(3)]  # three tasks in one executor
    assert [m for m, *_ in writer_gate.requests] == ["POST"]

    read = make_codec("avro-confluent", "value.format", {"url": reader_gate.url}, VALUE_CTX)
    read.decoder(SCHEMA)
    assert reader_gate.requests == [], "a decoder built (the options' check) asks nothing until it decodes"
    for _ in range(3):
        for p in payloads:
            assert read.decoder(SCHEMA).decode(p).batch.to_pylist() == BATCH.to_pylist()
    schema_id = int.from_bytes(payloads[0][0][1:5], "big")
    # The writer schema once per id; the subject's latest once per codec (the reader's defaults: primed on the driver
    # when a query is planned and shipped with the codec to its tasks, else asked when first needed, as here).
    assert [(m, path) for m, path, _ in reader_gate.requests] == [
        ("GET", f"/apis/ccompat/v7/schemas/ids/{schema_id}"),
        ("GET", "/apis/ccompat/v7/subjects/t-value/versions/latest"),
    ]


def test_basic_auth_credentials_in_the_url_are_sent_and_kept_out_of_messages(registry_gate):
    gate = registry_gate(authorization="Basic dXNlcjpzM2NyZXQ=")
    url = gate.url.replace("http://", "http://user:s3cret@")
    ok = codec(url, **{"basic-auth.credentials-source": "URL"})
    ok.encoder(SCHEMA)
    assert gate.requests[-1][2] == "Basic dXNlcjpzM2NyZXQ="
    assert "s3cret" not in repr(ok)


def test_mutual_tls_with_a_truststore_and_an_encrypted_client_key(registry_gate, tls_files):
    gate = registry_gate(tls=tls_files)
    tls = {"ssl.truststore.location": tls_files.ca, "ssl.keystore.location": tls_files.client_pem}
    ok = codec(gate.url, **tls, **{"ssl.keystore.password": tls_files.key_password})
    assert ok.decoder(SCHEMA).decode(ok.encoder(SCHEMA).encode(BATCH)).batch.to_pylist() == BATCH.to_pylist()
    with pytest.raises(RegistryError, match="cannot reach the schema registry"):
        codec(gate.url, **{"ssl.truststore.location": tls_files.ca}).encoder(SCHEMA)  # no client certificate


def test_basic_and_bearer_auth_together_are_rejected():
    with pytest.raises(FormatOptionError, match="cannot both be set"):
        codec("http://r:8081", **{"basic-auth.user-info": "u:p", "bearer-auth.token": "t"})


def test_keystore_that_is_not_pem_is_rejected_naming_the_option(tmp_path):
    store = tmp_path / "store.jks"
    store.write_bytes(b"\xfe\xed\xfe\xed binary jks")
    with pytest.raises(FormatOptionError, match=r"'value\.avro-confluent\.ssl\.keystore\.location': .* not a PEM"):
        codec("https://r:8081", **{"ssl.keystore.location": str(store)})


def test_a_writer_schema_with_references_to_other_subjects_is_read(registry_url):
    from confluent_kafka.schema_registry import SchemaReference

    client = confluent_client(registry_url)
    address = {"type": "record", "name": "Address", "namespace": "shop", "fields": [{"name": "city", "type": "string"}]}
    subject = f"address-{uuid.uuid4().hex}"
    client.register_schema(subject, Schema(json.dumps(address), "AVRO"))
    person = {
        "type": "record", "name": "Person", "namespace": "shop",
        "fields": [{"name": "id", "type": "int"}, {"name": "home", "type": "shop.Address"},
                   {"name": "work", "type": ["null", "shop.Address"], "default": None}],
    }  # fmt: skip
    writer = Schema(json.dumps(person), "AVRO", [SchemaReference("shop.Address", subject, 1)])
    serialize = AvroSerializer(client, writer, conf={"auto.register.schemas": True})
    ctx = SerializationContext("t", MessageField.VALUE)
    payloads = [
        serialize({"id": 1, "home": {"city": "Bern"}, "work": {"city": "Basel"}}, ctx),
        serialize({"id": 2, "home": {"city": "Chur"}, "work": None}, ctx),
    ]
    columns = pa.schema([("id", pa.int32()), ("home", pa.struct([("city", pa.string())])),
                         ("work", pa.struct([("city", pa.string())]))])  # fmt: skip

    read = make_codec("avro-confluent", "value.format", {"url": registry_url}, VALUE_CTX)
    decoded = read.decoder(columns).decode(payloads)

    assert not decoded.failures
    assert decoded.batch.to_pylist() == [
        {"id": 1, "home": {"city": "Bern"}, "work": {"city": "Basel"}},
        {"id": 2, "home": {"city": "Chur"}, "work": None},
    ]


# -- keys as Flink writes them, and a refused write that registers nothing ----------------------------------

# The key schema Flink's avro-confluent registers for `id INT` declared PRIMARY KEY (so NOT NULL).
FLINK_KEY = {
    "type": "record",
    "name": "record",
    "namespace": "org.apache.flink.avro.generated",
    "fields": [{"name": "id", "type": "int"}],
}


def test_a_key_subject_gets_the_schema_flink_registers_for_a_primary_key(
    spark, new_topic, options, bootstrap, registry_url
):
    topic = new_topic()
    client = confluent_client(registry_url)
    client.register_schema(f"{topic}-key", Schema(json.dumps(FLINK_KEY), "AVRO"))  # as a Flink job left it
    opts = avro_options(options(topic), registry_url)
    spark.createDataFrame([(1, "a")], "id INT, name STRING").write.format("upsert-kafka").options(**opts).mode(
        "append"
    ).save()
    assert client.get_versions(f"{topic}-key") == [1], "no second key version next to Flink's"
    key = json.loads(client.get_latest_version(f"{topic}-key").schema.schema_str)
    assert key["fields"] == [{"name": "id", "type": "int"}]
    value = json.loads(client.get_latest_version(f"{topic}-value").schema.schema_str)
    assert {"name": "name", "type": ["null", "string"], "default": None} in value["fields"], "values stay nullable"
    read = spark.read.format("upsert-kafka").options(**opts).schema("id INT, name STRING").load()
    assert [tuple(r) for r in read.collect()] == [(1, "a")]


def test_a_value_schema_the_registry_refuses_leaves_no_key_version_behind(
    spark, new_topic, options, bootstrap, registry_url
):
    from confluent_kafka.schema_registry import ServerConfig
    from confluent_kafka.schema_registry.common.schema_registry_client import ConfigCompatibilityLevel
    from confluent_kafka.schema_registry.error import SchemaRegistryError

    topic = new_topic()
    client = confluent_client(registry_url)
    client.set_config(f"{topic}-value", ServerConfig(compatibility=ConfigCompatibilityLevel.BACKWARD))
    existing = {"type": "record", "name": "record", "fields": [{"name": "name", "type": "int"}]}
    client.register_schema(f"{topic}-value", Schema(json.dumps(existing), "AVRO"))
    opts = avro_options(options(topic), registry_url)
    rows = spark.createDataFrame([(1, "a")], "id INT, name STRING")
    with pytest.raises(Exception, match=r"option 'value\.format' \(avro-confluent\).*not compatible"):
        rows.write.format("upsert-kafka").options(**opts).mode("append").save()
    with pytest.raises(SchemaRegistryError) as no_key:
        client.get_versions(f"{topic}-key")
    # The registry's answer for a subject it does not hold (Confluent's API: 404, error code 40401), not any failure.
    assert (no_key.value.http_status_code, no_key.value.error_code) == (404, 40401), no_key.value
    assert client.get_versions(f"{topic}-value") == [1]
    assert consume_all(bootstrap, topic) == []
