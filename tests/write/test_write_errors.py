"""Writes that cannot succeed: each fails with one clear error naming the option, or the topic and the row's
key, and no partial task is reported as written."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka.admin import AdminClient
from pyspark_upsert_kafka.errors import TopicError
from pyspark_upsert_kafka.kafka.brokers import Brokers
from pyspark_upsert_kafka.kafka.spec import KafkaSpec
from pyspark_upsert_kafka.write.target import check_missing_topics, describe_write_target

from tests.support.kafka_io import consume_all
from tests.support.write_helpers import write

SCHEMA = "id INT, name STRING"


def test_missing_topic_fails_the_write_plan_when_the_brokers_do_not_create_topics(bootstrap):
    # The shared broker creates topics (auto.create.topics.enable is static), so its answer is given here.
    missing = f"missing-{uuid.uuid4().hex[:8]}"
    brokers = Brokers(KafkaSpec(bootstrap), **{"allow.auto.create.topics": False})
    with pytest.raises(TopicError, match=rf"topic '{missing}' does not exist .* create it first \(option 'topic'\)"):
        check_missing_topics(brokers, [missing], creates_topics=False)
    check_missing_topics(brokers, [missing], creates_topics=None)  # unknown: the first record will tell


def test_planning_a_write_to_a_missing_topic_does_not_create_it(bootstrap):
    missing = f"missing-{uuid.uuid4().hex[:8]}"
    target = describe_write_target(KafkaSpec(bootstrap), (missing,), None, 0)

    assert target.topics == ()
    assert missing not in AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics


def test_record_over_the_topics_max_message_bytes_names_the_topic_the_limit_and_the_key(
    spark, new_topic, options, bootstrap
):
    topic = new_topic(**{"max.message.bytes": "2000"})
    with pytest.raises(Exception) as error:
        write(spark, options(topic), [(1, "a"), (2, "x" * 5000), (3, "c")], SCHEMA)
    message = str(error.value)
    assert f"could not be written to topic '{topic}'" in message
    assert "larger than the topic accepts (2000 bytes)" in message
    assert "first failed record's key: b'{\"id\":2}'" in message


def test_value_the_format_cannot_encode_names_the_rows_key(spark, new_topic, options):
    opts = options(new_topic(), {"value.format": "raw", "value.fields-include": "EXCEPT_KEY"})
    with pytest.raises(Exception, match=r"cannot encode the value of the row with key \{'id': 2\} .*format 'raw'"):
        write(spark, opts, [(1, "a"), (2, None)], SCHEMA)


def test_type_the_json_format_cannot_hold_fails_the_plan_naming_the_column(spark, new_topic, options, bootstrap):
    # A task once failed on the first row ("cannot encode ... timedelta"): now the driver refuses the
    # column before any task, naming it, the format option and the types json holds.
    topic = new_topic()
    df = spark.sql("SELECT 7 AS id, INTERVAL '1' DAY AS wait")
    with pytest.raises(Exception) as error:
        df.write.format("upsert-kafka").options(**options(topic)).mode("append").save()
    message = str(error.value)
    assert "[PYTHON_DATA_SOURCE_ERROR]" in message and "SchemaError: column 'wait' has type INTERVAL DAY" in message
    assert "option 'value.format'" in message and "MAP (STRING keys), STRUCT" in message
    assert consume_all(bootstrap, topic) == []


def test_columns_the_format_cannot_hold_fail_the_plan_naming_the_option(spark, new_topic, options):
    with pytest.raises(
        Exception, match=r"option 'value.format' \(raw\): the raw value format holds exactly one column"
    ):
        write(spark, options(new_topic(), {"value.format": "raw"}), [(1, "a")], SCHEMA)
