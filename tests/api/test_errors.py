"""Bad options and unreachable brokers fail at once with a message that says what to change."""

from __future__ import annotations

import pytest

SCHEMA = "id INT, name STRING"


def read(spark, opts: dict, schema: str = SCHEMA):
    return spark.read.format("upsert-kafka").options(**opts).schema(schema).load().collect()


def write(spark, opts: dict, rows: list[tuple], schema: str = SCHEMA) -> None:
    spark.createDataFrame(rows, schema).write.format("upsert-kafka").options(**opts).mode("append").save()


def test_missing_key_fields_names_the_option(spark, new_topic, options):
    opts = options(new_topic())
    del opts["key.fields"]
    with pytest.raises(Exception, match=r"option 'key\.fields' is required"):
        read(spark, opts)


def test_key_field_not_in_schema_names_the_column_and_suggests_one(spark, new_topic, options):
    with pytest.raises(Exception, match=r"column 'idd' is not in the schema \(id, name\)\. Did you mean 'id'\?"):
        read(spark, options(new_topic(), {"key.fields": "idd"}))


def test_missing_bootstrap_servers_names_the_option(spark, new_topic, options):
    opts = options(new_topic())
    del opts["properties.bootstrap.servers"]
    with pytest.raises(Exception, match=r"option 'properties\.bootstrap\.servers' is required"):
        write(spark, opts, [(1, "a")])


def test_unknown_option_suggests_the_known_spelling(spark, new_topic, options):
    with pytest.raises(Exception, match=r"unknown option 'key\.field'\. Did you mean 'key\.fields'\?"):
        read(spark, options(new_topic(), {"key.field": "id"}))


def test_spark_alias_with_a_different_value_than_its_flink_twin_is_rejected(spark, new_topic, options):
    opts = options(new_topic(), {"kafka.bootstrap.servers": "elsewhere:9092"})
    with pytest.raises(Exception, match=r"mean the same thing but have different values"):
        read(spark, opts)


def test_spark_alias_alone_is_accepted(spark, new_topic, options, bootstrap):
    opts = options(new_topic())
    del opts["properties.bootstrap.servers"]
    opts["kafka.bootstrap.servers"] = bootstrap
    write(spark, opts, [(1, "a")])
    assert read(spark, opts) == [(1, "a")]


def test_java_only_client_setting_names_the_librdkafka_equivalent(spark, new_topic, options):
    opts = options(new_topic(), {"kafka.sasl.jaas.config": "org.apache...PlainLoginModule required password=s3cret;"})
    with pytest.raises(Exception, match=r"'properties\.sasl\.username' and 'properties\.sasl\.password'") as err:
        read(spark, opts)
    assert "s3cret" not in str(err.value)


def test_unreachable_brokers_fail_naming_servers_and_the_time_waited(spark):
    opts = {
        "topic": "t",
        "properties.bootstrap.servers": "127.0.0.1:1",
        "key.fields": "id",
        "client.timeout": "2 s",
        "client.retries": "1",
        "client.retry-interval": "100 ms",
    }
    waited = r"brokers '127\.0\.0\.1:1': no answer but transient errors for \d+ s .*a query waits 2\.1 s for them"
    with pytest.raises(Exception, match=waited + r" \(options 'client\.timeout' = 2 s, 'client\.retries' = 1"):
        read(spark, opts)
    with pytest.raises(Exception, match=waited):
        write(spark, opts, [(1, "a")])


def test_missing_topic_is_named(spark, options):
    with pytest.raises(Exception, match=r"topic 'no-such-topic-here' does not exist"):
        read(spark, options("no-such-topic-here"))


def test_bad_duration_names_the_option(spark, new_topic, options):
    with pytest.raises(Exception, match=r"option 'client\.timeout' must be a duration"):
        read(spark, options(new_topic(), {"client.timeout": "soon"}))


def test_streaming_table_mode_is_rejected(spark, new_topic, options):
    df = spark.readStream.format("upsert-kafka").options(**options(new_topic(), {"read.mode": "table"}))
    with pytest.raises(Exception, match=r"a streaming read is a changelog"):
        df.schema(SCHEMA + ", _change_type STRING").load().writeStream.format("noop").start().awaitTermination(30)


def test_changelog_read_without_change_column_explains_how_to_add_it(spark, new_topic, options):
    with pytest.raises(Exception, match=r"needs the column '_change_type STRING'"):
        read(spark, options(new_topic(), {"read.mode": "changelog"}))


def test_unknown_change_kind_on_write_names_the_value_and_the_key(spark, new_topic, options):
    with pytest.raises(Exception, match=r"unknown change kind 'remove' in the row with key \{'id': 2\}"):
        write(
            spark,
            options(new_topic()),
            [(1, "a", "upsert"), (2, "b", "remove")],
            SCHEMA + ", _change_type STRING",
        )


def test_null_key_on_write_fails_showing_the_row_key(spark, new_topic, options):
    with pytest.raises(Exception, match=r"key column 'id' is null in the row with key \{'id': None\}"):
        write(spark, options(new_topic()), [(1, "a"), (None, "b")])


def test_changelog_format_as_key_format_is_rejected(spark, new_topic, options):
    with pytest.raises(Exception, match=r"option 'key\.format': 'debezium-json' is a changelog format"):
        read(spark, options(new_topic(), {"key.format": "debezium-json"}))


def test_unknown_format_lists_the_available_ones(spark, new_topic, options):
    with pytest.raises(Exception, match=r"option 'key\.format': unknown format 'jsn'; available: .*json"):
        read(spark, options(new_topic(), {"key.format": "jsn"}))


def test_unknown_format_option_lists_the_valid_ones(spark, new_topic, options):
    with pytest.raises(
        Exception, match=r"unknown option\(s\) value\.json\.ignore-errors .*value\.json\.ignore-parse-errors"
    ):
        read(spark, options(new_topic(), {"value.json.ignore-errors": "true"}))


def test_save_with_a_path_explains_the_topic_option(spark, new_topic, options):
    opts = options(new_topic())
    topic = opts.pop("topic")
    with pytest.raises(Exception, match=r"not a path: .*\.option\(\"topic\", \"" + topic):
        spark.createDataFrame([(1, "a")], SCHEMA).write.format("upsert-kafka").options(**opts).mode("append").save(
            topic
        )
