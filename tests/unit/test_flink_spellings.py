"""Every option and metadata key of Flink's Kafka and Upsert Kafka table options (Flink's kafka and upsert-kafka
documentation pages, the Flink 1.13 release notes, Alibaba Realtime Compute's upsert-kafka page), tried as a user
copying them would: each one is read as the setting it names (the spec holds it; in a context where it has no
meaning it changes nothing), or fails with one OptionError that names what does the same in Spark.
Pure logic: the spec parser on the driver, no broker.
"""

from __future__ import annotations

import dataclasses
import re
from functools import reduce

import pytest
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType, TimestampType
from pyspark_upsert_kafka import OptionError
from pyspark_upsert_kafka.options.ddl import parse_ddl
from pyspark_upsert_kafka.options.flink_only import JAVA_ONLY_PROPERTIES, NOT_IN_SPARK

from tests.support.bad_inputs import BASE, READ, READ_STREAM, REGISTRY, WRITE, plan

ALL = (READ, READ_STREAM, WRITE)
READS = (READ, READ_STREAM)
# Where a spec holds its codecs; a path ending in `__class__.__name__` reads the codec's class name.
KEY_CODEC_AT, VALUE_CODEC_AT = "layout.key_codec", "layout.value_codec"
KEY_CODEC, VALUE_CODEC = f"{KEY_CODEC_AT}.__class__.__name__", f"{VALUE_CODEC_AT}.__class__.__name__"
REGISTRY_AT = f"{VALUE_CODEC_AT}.settings.url"
# The metadata columns of Flink's documented DDL, in Spark's types, as a user copying them writes them in 'schema'.
DDL_METADATA = {
    f.name: f.dataType
    for f in parse_ddl(
        "topic STRING, partition INT, headers MAP<STRING, BINARY>, `leader-epoch` INT, offset BIGINT, "
        "timestamp TIMESTAMP_LTZ, `timestamp-type` STRING"
    )
}


def _schema(*extra: tuple[str, object], change: bool = True) -> StructType:
    fields = [StructField("id", IntegerType()), StructField("name", StringType())]
    fields += [StructField(n, t) for n, t in extra]
    return StructType(fields + ([StructField("_change_type", StringType())] if change else []))


# (label, options, contexts, expected): the spelling works, and the spec holds {attribute path: value} (a path
# whose first attribute a context's spec lacks, e.g. a scan option's in a write, is skipped there); or a tuple of the
# words the error must hold, the Spark way among them.
Case = tuple[str, dict[str, str], tuple[str, ...], dict[str, object] | tuple[str, ...]]
CASES: list[Case] = [
    # --- the options of Flink's documented tables
    ("connector", {"connector": "upsert-kafka"}, ALL, ("'connector'", '.format("upsert-kafka")')),
    ("topic", {"topic": "t"}, ALL, {"topics.names": ("t",)}),
    ("topic-list", {"topic": "t1;t2"}, READS, {"topics.names": ("t1", "t2")}),
    ("topic-pattern", {"topic": "", "topic-pattern": "t.*"}, READS, {"topics.pattern": "t.*"}),
    ("properties.bootstrap.servers", {}, ALL, {"kafka.bootstrap_servers": BASE["properties.bootstrap.servers"]}),
    (
        "properties.group.id",
        {"properties.group.id": "testGroup"},
        ALL,
        {"kafka.properties": (("group.id", "testGroup"),)},
    ),
    (
        "properties.allow.auto.create.topics",
        {"properties.allow.auto.create.topics": "false"},
        ALL,
        {"kafka.properties": (("allow.auto.create.topics", "false"),)},
    ),
    ("format", {"format": "json"}, ALL, {KEY_CODEC: "JsonCodec", VALUE_CODEC: "JsonCodec"}),
    # Option 'format' is value.format's alias (as in Flink's kafka connector): the key keeps its own format.
    ("format-csv", {"format": "csv"}, ALL, {KEY_CODEC: "JsonCodec", VALUE_CODEC: "CsvCodec"}),
    (
        "key.format",
        {"key.format": "json", "value.format": "csv"},
        ALL,
        {KEY_CODEC: "JsonCodec", VALUE_CODEC: "CsvCodec"},
    ),
    ("key.fields", {"key.fields": "id;name"}, ALL, {"layout.key_fields": ("id", "name")}),
    (
        "key.fields-prefix",
        {"key.fields-prefix": "k_", "key.fields": "k_id", "value.fields-include": "EXCEPT_KEY"},
        (),
        {},
    ),  # needs its own schema: test_key_fields_prefix_as_in_flinks_documentation
    (
        "value.format",
        {"value.format": "json", "key.format": "csv"},
        ALL,
        {KEY_CODEC: "CsvCodec", VALUE_CODEC: "JsonCodec"},
    ),
    ("value.fields-include-ALL", {"value.fields-include": "ALL"}, ALL, {"layout.value_fields": ("id", "name")}),
    (
        "value.fields-include-EXCEPT_KEY",
        {"value.fields-include": "EXCEPT_KEY"},
        ALL,
        {"layout.value_fields": ("name",)},
    ),
    ("scan.startup.mode-earliest", {"scan.startup.mode": "earliest-offset"}, ALL, {"start.kind": "earliest"}),
    (
        "scan.startup.mode-group",
        {"scan.startup.mode": "group-offsets", "properties.group.id": "g"},
        ALL,
        {"start.kind": "group", "group_id": "g", "kafka.properties": (("group.id", "g"),)},
    ),
    (
        "scan.startup.specific-offsets",
        {
            "scan.startup.mode": "specific-offsets",
            "scan.startup.specific-offsets": "partition:0,offset:42;partition:1,offset:300",
        },
        ALL,
        {"start.kind": "specific", "start.specific": ((None, ((0, 42), (1, 300))),)},
    ),
    (
        "scan.startup.timestamp-millis",
        {"scan.startup.mode": "timestamp", "scan.startup.timestamp-millis": "1700000000000"},
        ALL,
        {"start.kind": "timestamp", "start.timestamp_ms": 1700000000000},
    ),
    ("scan.bounded.mode", {"scan.bounded.mode": "latest-offset"}, ALL, {"end.kind": "latest"}),
    (
        "scan.bounded.specific-offsets",
        {"scan.bounded.mode": "specific-offsets", "scan.bounded.specific-offsets": "partition:0,offset:42"},
        (READ,),
        {"end.kind": "specific", "end.specific": ((None, ((0, 42),)),)},
    ),
    (
        "scan.bounded.timestamp-millis",
        {"scan.bounded.mode": "timestamp", "scan.bounded.timestamp-millis": "1700000000000"},
        (READ,),
        {"end.kind": "timestamp", "end.timestamp_ms": 1700000000000},
    ),
    (
        "scan.topic-partition-discovery.interval",
        {"scan.topic-partition-discovery.interval": "10 s"},
        ALL,
        {"discovery_interval_s": 10.0},
    ),
    ("sink.partitioner-default", {"sink.partitioner": "default"}, ALL, {"partitioner": None}),
    ("sink.partitioner-fixed", {"sink.partitioner": "fixed"}, (WRITE,), ("'sink.partitioner'", "'default'")),
    ("sink.partitioner-round-robin", {"sink.partitioner": "round-robin"}, (WRITE,), ("'sink.partitioner'",)),
    (
        "sink.partitioner-java-class",
        {"sink.partitioner": "org.mycompany.MyPartitioner"},
        (WRITE,),
        ("'sink.partitioner'", "module:function"),
    ),
    ("sink.semantic", {"sink.semantic": "at-least-once"}, ALL, {"guarantee": "at-least-once"}),
    (
        "sink.semantic-exactly-once",
        {"sink.semantic": "exactly-once", "sink.transactional-id-prefix": "p"},
        ALL,
        {"guarantee": "exactly-once", "transactional_id_prefix": "p"},
    ),
    ("sink.delivery-guarantee", {"sink.delivery-guarantee": "at-least-once"}, ALL, {"guarantee": "at-least-once"}),
    ("sink.parallelism", {"sink.parallelism": "4"}, (WRITE,), ("'sink.parallelism'", "df.repartition(4, 'id')")),
    (
        "sink.buffer-flush",
        {"sink.buffer-flush.max-rows": "1000", "sink.buffer-flush.interval": "1 s"},
        ALL,
        {"buffer.max_rows": 1000, "buffer.interval_s": 1.0},
    ),
    # --- format options, with Flink's prefixes
    (
        "json.ignore-parse-errors-with-format",
        {"format": "json", "json.ignore-parse-errors": "true"},
        ALL,
        {f"{KEY_CODEC_AT}.ignore_parse_errors": False, f"{VALUE_CODEC_AT}.ignore_parse_errors": True},
    ),
    (
        "key.json.ignore-parse-errors",
        {"key.format": "json", "key.json.ignore-parse-errors": "true"},
        ALL,
        {f"{KEY_CODEC_AT}.ignore_parse_errors": True, f"{VALUE_CODEC_AT}.ignore_parse_errors": False},
    ),
    (
        "value.json.fail-on-missing-field",
        {"value.json.fail-on-missing-field": "true"},
        ALL,
        {f"{VALUE_CODEC_AT}.fail_on_missing_field": True},
    ),
    (
        "avro-confluent-1.13-spelling",
        {
            "format": "avro-confluent",
            "avro-confluent.schema-registry.url": REGISTRY,
            "avro-confluent.schema-registry.subject": "user_behavior",
        },
        READS,
        {VALUE_CODEC: "AvroConfluentCodec", f"{VALUE_CODEC_AT}.subject": "user_behavior", REGISTRY_AT: REGISTRY},
    ),
    (
        "value.avro-confluent.schema-registry.url",
        {
            "value.format": "avro-confluent",
            "value.avro-confluent.schema-registry.url": REGISTRY,
            "value.avro-confluent.schema-registry.subject": "s",
        },
        READS,
        {VALUE_CODEC: "AvroConfluentCodec", f"{VALUE_CODEC_AT}.subject": "s", REGISTRY_AT: REGISTRY},
    ),
    (
        "key.avro-confluent.schema-registry.url",
        {
            "key.format": "avro-confluent",
            "key.avro-confluent.schema-registry.url": REGISTRY,
            "key.avro-confluent.schema-registry.subject": "s",
        },
        READS,
        {KEY_CODEC: "AvroConfluentCodec", f"{KEY_CODEC_AT}.subject": "s", f"{KEY_CODEC_AT}.settings.url": REGISTRY},
    ),
    (
        "avro-confluent-both-spellings-disagree",
        {
            "value.format": "avro-confluent",
            "value.avro-confluent.url": REGISTRY,
            "value.avro-confluent.schema-registry.url": "http://other:8081",
        },
        ALL,
        ("'value.avro-confluent.url'", "'value.avro-confluent.schema-registry.url'"),
    ),
    # --- Flink's documented security example: Java client settings and their librdkafka spellings
    (
        "properties.security.protocol",
        {"properties.security.protocol": "SASL_SSL", "properties.sasl.mechanism": "SCRAM-SHA-256"},
        ALL,
        {"kafka.properties": (("sasl.mechanism", "SCRAM-SHA-256"), ("security.protocol", "SASL_SSL"))},
    ),
    (
        "properties.sasl.jaas.config",
        {"properties.sasl.jaas.config": "PlainLoginModule required"},
        ALL,
        ("'properties.sasl.jaas.config'", "'properties.sasl.username'", "'properties.sasl.password'"),
    ),
    (
        "properties.ssl.truststore.location",
        {"properties.ssl.truststore.location": "/x.jks"},
        ALL,
        ("'properties.ssl.truststore.location'", "'properties.ssl.ca.location'"),
    ),
    (
        "properties.ssl.truststore.password",
        {"properties.ssl.truststore.password": "x"},
        ALL,
        ("'properties.ssl.truststore.password'", "'properties.ssl.ca.location'"),
    ),
    (
        "properties.ssl.keystore.location",
        {"properties.ssl.keystore.location": "/x.jks"},
        ALL,
        ("'properties.ssl.keystore.location'", "'properties.ssl.certificate.location'"),
    ),
    ("properties.key.deserializer", {"properties.key.deserializer": "x"}, ALL, ("'key.format'",)),
    ("properties.value.deserializer", {"properties.value.deserializer": "x"}, ALL, ("'value.format'",)),
    ("properties.key.serializer", {"properties.key.serializer": "x"}, ALL, ("'key.format'",)),
    # --- Flink job and YAML pipeline settings that are not options of a table here
    (
        "table.exec.source.idle-timeout",
        {"table.exec.source.idle-timeout": "10 s"},
        ALL,
        ("'scan.watermark.idle-timeout'",),
    ),
    ("execution.runtime-mode", {"execution.runtime-mode": "BATCH"}, ALL, ("spark.read", "spark.readStream")),
    ("pipeline-type", {"type": "upsert-kafka"}, ALL, ('.format("upsert-kafka")',)),
    ("pipeline-name", {"name": "Upsert Kafka Sink"}, ALL, (".queryName(",)),
    *[
        (f"aliyun.kafka.{k}", {f"aliyun.kafka.{k}": "x"}, ALL, ("'properties.bootstrap.servers'", "'properties.sasl."))
        for k in ("accessKeyId", "accessKeySecret", "instanceId", "endpoint", "regionId")
    ],
]


def _at(spec: object, path: str) -> object:
    return reduce(getattr, path.split("."), spec)


def _applies(spec: object, path: str) -> bool:
    """Whether the path's first attribute is a field of this context's spec: a scan setting's is not a write's. A
    path that applies must then be held (a misspelt rest fails, never skipped)."""
    return path.split(".")[0] in {f.name for f in dataclasses.fields(spec)}  # type: ignore[arg-type]


def _fingerprint(spec) -> str:
    """A spec's fields and its codecs' settings, comparable between two plans."""
    codecs = [vars(c) for c in (spec.layout.key_codec, spec.layout.value_codec)]
    return re.sub(r" at 0x[0-9a-f]+>", ">", repr(spec)) + repr(codecs)


@pytest.mark.parametrize(
    ("context", "options", "expected"),
    [pytest.param(c, o, e, id=f"{c}-{label}") for label, o, contexts, e in CASES for c in contexts],
)
def test_every_flink_spelling_works_or_names_the_spark_way(context, options, expected):
    if isinstance(expected, dict):
        spec = plan(context, BASE | options)
        held = {path: _at(spec, path) for path in expected if _applies(spec, path)}
        assert held == {path: expected[path] for path in held}
        if not held:  # an option of another context (a sink option in a read): accepted, and it changes nothing
            assert _fingerprint(spec) == _fingerprint(plan(context, BASE))
        return
    with pytest.raises(OptionError) as caught:
        plan(context, BASE | options)
    message = str(caught.value)
    missing = [w for w in expected if w not in message]
    assert not missing, f"{missing} not in: {message}"
    assert "x.jks" not in message and "PlainLoginModule" not in message  # values are never echoed


def test_every_expected_path_applies_in_one_of_its_contexts():
    """A path no context's spec has (a misspelt first attribute) would be skipped everywhere: none is."""
    specs = {context: plan(context, BASE) for context in ALL}
    unheld = [
        f"{label}: {path}"
        for label, _, contexts, expected in CASES
        if isinstance(expected, dict)
        for path in expected
        if not any(_applies(specs[c], path) for c in contexts)
    ]
    assert unheld == []


def test_key_fields_prefix_as_in_flinks_documentation():
    schema = StructType(
        [
            StructField(n, t)
            for n, t in (
                ("k_version", IntegerType()),
                ("k_user_id", LongType()),
                ("version", IntegerType()),
                ("behavior", StringType()),
            )
        ]
    )
    options = BASE | {
        "key.fields-prefix": "k_",
        "key.fields": "k_version;k_user_id",
        "value.fields-include": "EXCEPT_KEY",
    }
    spec = plan(WRITE, options, schema)
    assert spec.layout.key_record_names == ("version", "user_id")


@pytest.mark.parametrize("context", ALL)
@pytest.mark.parametrize("key", sorted(DDL_METADATA))
def test_every_metadata_key_of_flinks_documented_ddl_is_a_metadata_column(context, key):
    # In a write a read-only key is what Flink's VIRTUAL declares: the column is not written.
    spec = plan(context, BASE | {"metadata.columns": key}, _schema((key, DDL_METADATA[key]), change=context != WRITE))
    assert [(c.kind, c.column) for c in spec.layout.metadata] == [(key, key)]


@pytest.mark.parametrize("key", ["value.source.timestamp", "value.source.table"])
def test_flinks_documented_debezium_metadata_keys_are_metadata_columns(key):
    kind = TimestampType() if key.endswith("timestamp") else StringType()
    options = BASE | {"value.format": "debezium-json", "metadata.columns": f"c={key}"}
    spec = plan(READ, options, _schema(("c", kind)))
    assert [(c.kind, c.column) for c in spec.layout.metadata] == [(key, "c")]


def test_avro_confluent_older_spelling_reaches_the_codec():
    options = BASE | {
        "value.format": "avro-confluent",
        "value.avro-confluent.schema-registry.url": REGISTRY,
        "value.avro-confluent.schema-registry.subject": "user_behavior",
    }
    spec = plan(READ, options, _schema())
    assert spec.layout.value_codec.subject == "user_behavior"
    assert spec.layout.value_codec.settings.url == REGISTRY


def test_option_page_lists_what_cannot_apply_to_spark_with_its_replacement():
    from pathlib import Path

    page = Path(__file__).resolve().parents[2].joinpath("connector/options/README.md").read_text()
    section = page.split("## Flink settings with no meaning here", 1)[1].split("\n## ", 1)[0]
    for name in (*NOT_IN_SPARK, *(f"properties.{p}" for p in JAVA_ONLY_PROPERTIES), "sink.parallelism"):
        assert f"`{name}`" in section, f"connector/options/README.md's section lacks {name}"
