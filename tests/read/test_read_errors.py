"""Bad read options fail at once with one clear error naming the option (extends tests/api/test_errors.py)."""

from __future__ import annotations

import time

import pytest
from pyspark.errors import StreamingQueryException

from tests.support.kafka_io import DEFAULT_PATIENCE_S
from tests.support.read_helpers import load, stream

SPECIFIC_FORM = r"'partition:0,offset:42;partition:1,offset:300'"


@pytest.mark.parametrize(
    ("more", "message"),
    [
        (
            {"read.mode": "tabel"},
            r"option 'read\.mode' must be one of table, changelog, got 'tabel'\. Did you mean 'table'\?",
        ),
        (
            {"scan.startup.mode": "earliest"},
            r"option 'scan\.startup\.mode' must be one of earliest-offset, latest-offset, group-offsets, timestamp, "
            r"specific-offsets, got 'earliest'",
        ),
        (
            {"scan.bounded.mode": "earliest-offset"},
            r"option 'scan\.bounded\.mode' must be one of latest-offset, group-offsets, timestamp, specific-offsets",
        ),
        ({"scan.startup.mode": "timestamp"}, r"option 'scan\.startup\.timestamp-millis' is required by the timestamp"),
        ({"scan.bounded.mode": "timestamp"}, r"option 'scan\.bounded\.timestamp-millis' is required by the timestamp"),
        (
            {"scan.bounded.mode": "specific-offsets"},
            rf"option 'scan\.bounded\.specific-offsets' is required by the specific-offsets mode, "
            rf"e\.g\. {SPECIFIC_FORM}",
        ),
        (
            {"scan.startup.mode": "specific-offsets", "scan.startup.specific-offsets": "0:42"},
            rf"option 'scan\.startup\.specific-offsets': cannot read '0:42'; expected the form {SPECIFIC_FORM}",
        ),
        (
            {"scan.startup.mode": "timestamp", "scan.startup.timestamp-millis": "yesterday"},
            r"option 'scan\.startup\.timestamp-millis' must be epoch milliseconds, got 'yesterday'",
        ),
        ({"endingTimestamp": "-5"}, r"option 'endingTimestamp' must be epoch milliseconds, got '-5'"),
        (
            {"startingOffsets": "{not json"},
            r"option 'startingOffsets' must be earliest, latest or JSON like .*; got '\{not json'",
        ),
        (
            {"startingOffsets": '{"elsewhere": {"0": 1}}'},
            r"option 'startingOffsets' gives offsets for topic 'elsewhere', which this read does not cover",
        ),
        (
            {"startingOffsets": "earliest", "scan.startup.mode": "latest-offset"},
            r"options 'scan\.startup\.mode' and 'startingOffsets' both set where to start; give one",
        ),
        (
            {"endingOffsets": "latest", "endingTimestamp": "1"},
            r"options 'endingOffsets' and 'endingTimestamp' both set where to stop; give one",
        ),
        (
            {"maxOffsetsPerTrigger": "5", "scan.max-records-per-batch": "6"},
            r"options '.*' and '.*' mean the same thing but have different values",
        ),
        (
            {"failOnDataLoss": "false", "scan.fail-on-data-loss": "true"},
            r"options '.*' and '.*' mean the same thing but have different values",
        ),
        (
            {"scan.startup.mod": "earliest-offset"},
            r"unknown option 'scan\.startup\.mod'\. Did you mean 'scan\.startup\.mode'\?",
        ),
        ({"startingOffset": "earliest"}, r"unknown option 'startingoffset'\. Did you mean 'startingOffsets'\?"),
        ({"scan.max-records-per-batch": "0"}, r"option 'scan\.max-records-per-batch' must be a positive whole number"),
        ({"minPartitions": "many"}, r"option 'minPartitions' must be a positive whole number, got 'many'"),
        ({"scan.fail-on-data-loss": "maybe"}, r"option 'scan\.fail-on-data-loss' must be true or false, got 'maybe'"),
        ({"scan.watermark.idle-timeout": "a while"}, r"option 'scan\.watermark\.idle-timeout' must be a duration"),
        (
            {"scan.watermark.alignment.max-drift": "0 s"},
            r"option 'scan\.watermark\.alignment\.max-drift' must be positive",
        ),
        (
            {"scan.watermark.alignment.max-drift": "0.4 ms"},
            r"option 'scan\.watermark\.alignment\.max-drift' must be at least 1 ms, in whole milliseconds .*"
            r"got '0\.4 ms'",
        ),
        (
            {"scan.watermark.alignment.max-drift": "2.5 ms"},
            r"option 'scan\.watermark\.alignment\.max-drift' must be at least 1 ms, in whole milliseconds",
        ),
        ({"scan.startup.mode": "group-offsets"}, r"group-offsets needs option 'properties\.group\.id'"),
        (
            {
                "scan.startup.mode": "group-offsets",
                "properties.group.id": "g",
                "properties.auto.offset.reset": "oldest",
            },
            r"option 'properties\.auto\.offset\.reset' must be earliest or latest, got 'oldest'",
        ),
        ({"changelog.compact": "true"}, r"option 'changelog\.compact' applies to read\.mode=changelog"),
        ({"scan.split.max-records": "10"}, r"'scan\.split\.max-records' / 'minPartitions' split .* only a changelog"),
        (
            {"read.mode": "changelog", "changelog.compact": "true", "minPartitions": "4"},
            r"option 'changelog\.compact' keeps one change per key .* 'minPartitions' would cut into slices",
        ),
        ({"topic-pattern": "orders-.*"}, r"options 'topic' and 'topic-pattern' exclude each other"),
    ],
)
def test_bad_read_option_fails_naming_it(spark, new_topic, options, more, message):
    schema = "id INT, name STRING" + (", _change_type STRING" if more.get("read.mode") == "changelog" else "")
    with pytest.raises(Exception, match=message):
        load(spark, options(new_topic(), more), schema).collect()


@pytest.mark.parametrize(
    "more",
    [
        {
            "scan.startup.mode": "specific-offsets",
            "scan.startup.specific-offsets": "partition:0,offset:1;partition:7,offset:1",
        },
        {"endingOffsets": '{TOPIC: {"7": 1}}'},
    ],
)
def test_specific_offsets_for_a_partition_the_topic_lacks_name_it(spark, new_topic, options, more):
    topic = new_topic(partitions=2)
    more = {k: v.replace("TOPIC", f'"{topic}"') for k, v in more.items()}
    option = next(iter(k for k in more if k != "scan.startup.mode"))
    where = f"topic '{topic}', which has" if option == "endingOffsets" else rf"the topics read \({topic}\), with"
    with pytest.raises(Exception, match=rf"option '{option}' names partition 7 of {where} partitions 0, 1"):
        load(spark, options(topic, more), "id INT, name STRING").collect()


def test_invalid_topic_pattern_names_the_option(spark, bootstrap):
    opts = {"topic-pattern": "orders-(", "properties.bootstrap.servers": bootstrap, "key.fields": "id"}
    with pytest.raises(Exception, match=r"option 'topic-pattern' is not a valid regular expression"):
        load(spark, opts, "id INT, name STRING").collect()


def test_a_missing_topic_of_a_list_is_named_alone(spark, new_topic, options):
    there = new_topic()
    with pytest.raises(Exception, match=r"topic 'not-there-at-all' does not exist .*\(option 'topic'\)"):
        load(spark, options(f"{there};not-there-at-all"), "id INT, name STRING").collect()


def test_stream_from_unreachable_brokers_fails_after_the_retry_bound_naming_servers_and_options(spark, tmp_path):
    opts = {
        "topic": "t",
        "properties.bootstrap.servers": "127.0.0.1:1",
        "key.fields": "id",
        "client.timeout": "2 s",
        "fetchOffset.numRetries": "2",  # Spark's spellings of client.retries and client.retry-interval
        "fetchOffset.retryIntervalMs": "500",
    }
    query = (
        stream(spark, opts)
        .writeStream.format("noop")
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    started = time.monotonic()
    try:
        with pytest.raises(
            StreamingQueryException,
            match=r"KafkaUnavailableError: .*brokers '127\.0\.0\.1:1': no answer but transient errors for \d+ s .*"
            r"waits 3 s for them \(options 'client\.timeout' = 2 s, 'client\.retries' = 2, "
            r"'client\.retry-interval' = 0\.5 s\)",
        ):
            query.awaitTermination(2 * DEFAULT_PATIENCE_S)
    finally:
        query.stop()
    # The options' bound (3 s), not the default one, was waited out: a margin no loaded machine takes up.
    assert time.monotonic() - started < DEFAULT_PATIENCE_S
