"""Every option and metadata key the seeds name (Flink's kafka and upsert-kafka pages, the Flink 1.13 release
notes, Realtime Compute's upsert-kafka page: copies in /work/shared/reference/), tried as a user copying them
would: each one works, or fails with one OptionError that names what does the same in Spark (issue 17).
Pure logic: the spec parser on the driver, no broker.
"""

from __future__ import annotations

import pytest
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType, TimestampType
from pyspark_upsert_kafka import OptionError
from pyspark_upsert_kafka.options.ddl import parse_ddl
from pyspark_upsert_kafka.options.flink_only import JAVA_ONLY_PROPERTIES, NOT_IN_SPARK

from tests.support.bad_inputs import BASE, READ, READ_STREAM, REGISTRY, WRITE, plan

ALL = (READ, READ_STREAM, WRITE)
READS = (READ, READ_STREAM)
OK = None  # the spelling works
# The metadata columns of the seeds' DDL, in Spark's types, as a user copying them writes them in option 'schema'.
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


# (label, options, contexts, expected: OK or the words the error must hold, the Spark way among them)
Case = tuple[str, dict[str, str], tuple[str, ...], tuple[str, ...] | None]
CASES: list[Case] = [
    # --- the options of the seeds' tables
    ("connector", {"connector": "upsert-kafka"}, ALL, ("'connector'", '.format("upsert-kafka")')),
    ("topic", {"topic": "t"}, ALL, OK),
    ("topic-list", {"topic": "t1;t2"}, READS, OK),
    ("topic-pattern", {"topic": "", "topic-pattern": "t.*"}, READS, OK),
    ("properties.bootstrap.servers", {}, ALL, OK),
    ("properties.group.id", {"properties.group.id": "testGroup"}, ALL, OK),
    ("properties.allow.auto.create.topics", {"properties.allow.auto.create.topics": "false"}, ALL, OK),
    ("format", {"format": "json"}, ALL, OK),
    ("format-csv", {"format": "csv"}, ALL, OK),
    ("key.format", {"key.format": "json"}, ALL, OK),
    ("key.fields", {"key.fields": "id;name"}, ALL, OK),
    (
        "key.fields-prefix",
        {"key.fields-prefix": "k_", "key.fields": "k_id", "value.fields-include": "EXCEPT_KEY"},
        (),
        OK,
    ),  # needs its own schema: test_key_fields_prefix_as_in_the_seeds
    ("value.format", {"value.format": "json"}, ALL, OK),
    ("value.fields-include-ALL", {"value.fields-include": "ALL"}, ALL, OK),
    ("value.fields-include-EXCEPT_KEY", {"value.fields-include": "EXCEPT_KEY"}, ALL, OK),
    ("scan.startup.mode-earliest", {"scan.startup.mode": "earliest-offset"}, ALL, OK),
    ("scan.startup.mode-group", {"scan.startup.mode": "group-offsets", "properties.group.id": "g"}, ALL, OK),
    (
        "scan.startup.specific-offsets",
        {
            "scan.startup.mode": "specific-offsets",
            "scan.startup.specific-offsets": "partition:0,offset:42;partition:1,offset:300",
        },
        ALL,
        OK,
    ),
    (
        "scan.startup.timestamp-millis",
        {"scan.startup.mode": "timestamp", "scan.startup.timestamp-millis": "1700000000000"},
        ALL,
        OK,
    ),
    ("scan.bounded.mode", {"scan.bounded.mode": "latest-offset"}, ALL, OK),
    (
        "scan.bounded.specific-offsets",
        {"scan.bounded.mode": "specific-offsets", "scan.bounded.specific-offsets": "partition:0,offset:42"},
        (READ,),
        OK,
    ),
    (
        "scan.bounded.timestamp-millis",
        {"scan.bounded.mode": "timestamp", "scan.bounded.timestamp-millis": "1700000000000"},
        (READ,),
        OK,
    ),
    ("scan.topic-partition-discovery.interval", {"scan.topic-partition-discovery.interval": "10 s"}, ALL, OK),
    ("sink.partitioner-default", {"sink.partitioner": "default"}, ALL, OK),
    ("sink.partitioner-fixed", {"sink.partitioner": "fixed"}, (WRITE,), ("'sink.partitioner'", "'default'")),
    ("sink.partitioner-round-robin", {"sink.partitioner": "round-robin"}, (WRITE,), ("'sink.partitioner'",)),
    (
        "sink.partitioner-java-class",
        {"sink.partitioner": "org.mycompany.MyPartitioner"},
        (WRITE,),
        ("'sink.partitioner'", "module:function"),
    ),
    ("sink.semantic", {"sink.semantic": "at-least-once"}, ALL, OK),
    ("sink.semantic-exactly-once", {"sink.semantic": "exactly-once", "sink.transactional-id-prefix": "p"}, ALL, OK),
    ("sink.delivery-guarantee", {"sink.delivery-guarantee": "at-least-once"}, ALL, OK),
    ("sink.parallelism", {"sink.parallelism": "4"}, (WRITE,), ("'sink.parallelism'", "df.repartition(4, 'id')")),
    ("sink.buffer-flush", {"sink.buffer-flush.max-rows": "1000", "sink.buffer-flush.interval": "1 s"}, ALL, OK),
    # --- format options, with Flink's prefixes
    ("json.ignore-parse-errors-with-format", {"format": "json", "json.ignore-parse-errors": "true"}, ALL, OK),
    ("key.json.ignore-parse-errors", {"key.format": "json", "key.json.ignore-parse-errors": "true"}, ALL, OK),
    ("value.json.fail-on-missing-field", {"value.json.fail-on-missing-field": "false"}, ALL, OK),
    (
        "avro-confluent-1.13-spelling",
        {
            "format": "avro-confluent",
            "avro-confluent.schema-registry.url": REGISTRY,
            "avro-confluent.schema-registry.subject": "user_behavior",
        },
        READS,
        OK,
    ),
    (
        "value.avro-confluent.schema-registry.url",
        {
            "value.format": "avro-confluent",
            "value.avro-confluent.schema-registry.url": REGISTRY,
            "value.avro-confluent.schema-registry.subject": "s",
        },
        READS,
        OK,
    ),
    (
        "key.avro-confluent.schema-registry.url",
        {
            "key.format": "avro-confluent",
            "key.avro-confluent.schema-registry.url": REGISTRY,
            "key.avro-confluent.schema-registry.subject": "s",
        },
        READS,
        OK,
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
    # --- the seeds' security example: Java client settings and their librdkafka spellings
    (
        "properties.security.protocol",
        {"properties.security.protocol": "SASL_SSL", "properties.sasl.mechanism": "SCRAM-SHA-256"},
        ALL,
        OK,
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


@pytest.mark.parametrize(
    ("context", "options", "expected"),
    [pytest.param(c, o, e, id=f"{c}-{label}") for label, o, contexts, e in CASES for c in contexts],
)
def test_every_seed_spelling_works_or_names_the_spark_way(context, options, expected):
    if expected is OK:
        plan(context, BASE | options)
        return
    with pytest.raises(OptionError) as caught:
        plan(context, BASE | options)
    message = str(caught.value)
    missing = [w for w in expected if w not in message]
    assert not missing, f"{missing} not in: {message}"
    assert "x.jks" not in message and "PlainLoginModule" not in message  # values are never echoed


def test_key_fields_prefix_as_in_the_seeds():
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
def test_every_metadata_key_of_the_seeds_ddl_is_a_metadata_column(context, key):
    # In a write a read-only key is what Flink's VIRTUAL declares: the column is not written.
    spec = plan(context, BASE | {"metadata.columns": key}, _schema((key, DDL_METADATA[key]), change=context != WRITE))
    assert [(c.kind, c.column) for c in spec.layout.metadata] == [(key, key)]


@pytest.mark.parametrize("key", ["value.source.timestamp", "value.source.table"])
def test_the_seeds_debezium_metadata_keys_are_metadata_columns(key):
    kind = TimestampType() if key.endswith("timestamp") else StringType()
    options = BASE | {"value.format": "debezium-json", "metadata.columns": f"c={key}"}
    plan(READ, options, _schema(("c", kind)))


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
