"""Option parsing alone (pure logic): aliases, durations, specs."""

from __future__ import annotations

import pytest
from pyspark.sql.types import IntegerType, StringType, StructField, StructType
from pyspark_upsert_kafka.errors import OptionError
from pyspark_upsert_kafka.options.canonical import canonical_options
from pyspark_upsert_kafka.options.catalog import option
from pyspark_upsert_kafka.options.kinds import Duration
from pyspark_upsert_kafka.options.layout import table_schema
from pyspark_upsert_kafka.read.spec import parse_read_spec
from pyspark_upsert_kafka.write.spec import parse_write_spec

SCHEMA = StructType([StructField("id", IntegerType()), StructField("name", StringType())])
BASE = {"topic": "t", "properties.bootstrap.servers": "b:9092", "key.fields": "id"}


@pytest.mark.parametrize(
    ("text", "seconds"), [("30 s", 30), ("500 ms", 0.5), ("2 min", 120), ("1500", 1.5), ("1h", 3600)]
)
def test_durations_read_like_flinks(text, seconds):
    assert Duration().parse(text) == seconds


@pytest.mark.parametrize("text", ["1 mins", "1 minute", "60000", "60 s", "1min"])
def test_one_duration_grammar_for_every_option(text):
    # sink.buffer-flush.interval had a grammar of its own, which refused '1 mins' that client.timeout took.
    buffered = parse_write_spec(BASE | {"sink.buffer-flush.max-rows": "10", "sink.buffer-flush.interval": text}, SCHEMA)
    assert buffered.buffer.interval_s == 60
    assert option("client.timeout").parse(text) == 60


@pytest.mark.parametrize(("text", "message"), [("1 fortnight", "must be a duration"), ("-1 s", "must be a duration")])
def test_a_malformed_duration_names_the_option(text, message):
    with pytest.raises(OptionError, match=rf"option 'client.timeout' {message} such as '30 s'"):
        option("client.timeout").parse(text)


def test_spark_spellings_fold_onto_flink_names():
    assert canonical_options({"subscribe": "t", "kafka.bootstrap.servers": "b", "format": "json"}) == {
        "topic": "t",
        "properties.bootstrap.servers": "b",
        "value.format": "json",
    }


def test_options_the_engine_adds_are_not_the_users():
    # A stream writer's checkpoint, and a Declarative Pipelines sink flow's name (create_sink + append_flow).
    given = {"topic": "t", "checkpointlocation": "/c", "queryname": "priced"}
    assert canonical_options(given) == {"topic": "t"}


def test_same_value_under_alias_and_flink_name_is_accepted():
    assert canonical_options({"topic": "t", "subscribe": "t"}) == {"topic": "t"}


def test_read_spec_types_every_value():
    spec = parse_read_spec(
        BASE | {"client.timeout": "5 s", "properties.security.protocol": "SSL"}, SCHEMA, streaming=False
    )
    assert (spec.topics.names, spec.layout.key_fields, spec.layout.value_fields, spec.changelog) == (
        ("t",),
        ("id",),
        ("id", "name"),
        False,
    )
    assert spec.kafka.timeout_s == 5
    assert spec.kafka.client_config()["security.protocol"] == "SSL"


def test_key_fields_match_columns_case_insensitively_and_keep_their_order():
    schema = StructType([StructField("A", IntegerType()), StructField("b", StringType())])
    assert parse_write_spec(BASE | {"key.fields": "b; a"}, schema).layout.key_fields == ("b", "A")


@pytest.mark.parametrize(
    ("prop", "value", "message"),
    [
        ("partitioner", "random", r"'properties\.partitioner' cannot be set to 'random': records are partitioned"),
        ("transactional.id", "t", r"'properties\.transactional\.id' cannot be set .*sink\.transactional-id-prefix"),
        ("isolation.level", "read_uncommitted", r"only 'read_committed' is accepted"),
        ("enable.auto.commit", "true", r"only 'false' is accepted\): offsets are tracked in Spark's checkpoint"),
        ("acks", "1", r"'properties\.acks' cannot be set to '1' \(only 'all' is accepted\)"),
        ("enable.idempotence", "false", r"option 'sink\.delivery-guarantee' decides it"),
    ],
)
def test_connector_owned_client_settings_cannot_be_overridden(prop, value, message):
    with pytest.raises(OptionError, match=message):
        parse_write_spec(BASE | {f"properties.{prop}": value}, SCHEMA)


def test_owned_settings_given_with_the_connectors_own_value_are_accepted():
    same = {"properties.isolation.level": "read_committed", "properties.acks": "all"}
    same |= {"properties.enable.auto.commit": "false"}
    assert parse_write_spec(BASE | same, SCHEMA).kafka.bootstrap_servers == "b:9092"


def test_acks_and_idempotence_are_the_users_when_no_delivery_guarantee_is_asked():
    loose = {"sink.delivery-guarantee": "none", "properties.acks": "0", "properties.enable.idempotence": "false"}
    assert ("acks", "0") in parse_write_spec(BASE | loose, SCHEMA).kafka.properties


def test_connector_owned_settings_are_applied_over_the_users_properties():
    kafka = parse_write_spec(BASE | {"properties.group.id": "monitoring", "properties.linger.ms": "5"}, SCHEMA).kafka
    config = kafka.client_config({"linger.ms": 20}, **{"group.id": "marker"})
    assert config["group.id"] == "marker", "the connector's own group wins"
    assert config["linger.ms"] == "5", "a tunable default yields to the user"


def test_schema_option_gets_the_change_column_unless_table_mode():
    def columns(more: dict) -> str:
        return table_schema({"key.fields": "id", "schema": "id INT"} | more).simpleString()

    assert columns({}) == "struct<id:int,_change_type:string>"
    assert columns({"changelog.column": "op"}) == "struct<id:int,op:string>"
    assert columns({"read.mode": "table"}) == "struct<id:int>"
    assert columns({"metadata.columns": "offset"}) == "struct<id:int,_change_type:string,offset:bigint>"


def test_schema_option_listing_the_change_column_gets_it_once():
    # The column was once added a second time and the read failed inside the JVM
    listed = table_schema({"key.fields": "id", "schema": "id INT, _Change_Type STRING"})
    assert listed.simpleString() == "struct<id:int,_Change_Type:string>"


def test_secret_values_never_appear_in_errors():
    with pytest.raises(OptionError) as err:
        parse_read_spec(BASE | {"properties.ssl.truststore.password": "hunter2"}, SCHEMA, streaming=False)
    assert "hunter2" not in str(err.value)


def test_a_logged_spec_masks_secret_properties():
    spec = parse_read_spec(
        BASE | {"properties.sasl.password": "hunter2", "properties.sasl.username": "bob"},
        SCHEMA,
        streaming=False,
    )
    assert "hunter2" not in repr(spec) and "bob" in repr(spec)
