"""Where records go, against the real broker: `sink.partitioner` and writes to several topics."""

from __future__ import annotations

import uuid

import pytest

from tests.support.kafka_io import consume_all
from tests.support.write_helpers import records, write

SCHEMA = "id INT, name STRING"
ROUTED = SCHEMA + ", topic STRING"


def test_user_partitioner_function_chooses_each_records_partition(spark, new_topic, options, bootstrap):
    topic = new_topic(partitions=3)
    opts = options(topic, {"sink.partitioner": "tests.workers.partitioners_for_tests:by_key_length"})
    spark.createDataFrame([(10**i, "x") for i in range(8)], SCHEMA).repartition(2).write.format("upsert-kafka").options(
        **opts
    ).mode("append").save()

    written = consume_all(bootstrap, topic)
    assert len(written) == 8
    assert all(partition == len(key) % 3 for partition, _, key, _ in written), written
    assert len({partition for partition, _, _, _ in written}) == 3


def test_user_partitioner_returning_no_partition_of_the_topic_fails_naming_it(spark, new_topic, options):
    opts = options(new_topic(partitions=2), {"sink.partitioner": "tests.workers.partitioners_for_tests:out_of_range"})
    with pytest.raises(Exception, match=r"out_of_range\) returned 2 for the key b'\{\"id\":1\}' .* partitions 0 to 1"):
        write(spark, opts, [(1, "a")], SCHEMA)


@pytest.mark.parametrize(
    "name, reason", [("fixed", "one partition"), ("round-robin", "spreads the records of one key")]
)
def test_fixed_and_round_robin_partitioners_are_refused_with_the_reason(spark, new_topic, options, name, reason):
    opts = options(new_topic(), {"sink.partitioner": name})
    with pytest.raises(Exception, match=rf"option 'sink.partitioner': '{name}' .*{reason}.*use 'default'"):
        write(spark, opts, [(1, "a")], SCHEMA)


def test_partitioner_module_that_does_not_import_is_named(spark, new_topic, options):
    opts = options(new_topic(), {"sink.partitioner": "tests.no_such_module:f"})
    with pytest.raises(Exception, match=r"option 'sink.partitioner': cannot load 'tests.no_such_module:f'"):
        write(spark, opts, [(1, "a")], SCHEMA)


def test_topic_list_sends_each_row_to_the_topic_in_its_topic_column(spark, new_topic, options, bootstrap):
    first, second = new_topic(), new_topic(partitions=2)
    opts = options(f"{first};{second}", {"metadata.columns": "topic"})
    write(spark, opts, [(1, "a", first), (2, "b", second), (3, "c", second)], ROUTED)

    assert records(bootstrap, first) == [({"id": 1}, {"id": 1, "name": "a"})]
    assert sorted(k["id"] for k, _ in records(bootstrap, second)) == [2, 3]


def test_topic_pattern_sends_rows_to_matching_topics_named_in_a_renamed_column(spark, new_topic, options, bootstrap):
    first, second = new_topic(), new_topic()
    opts = options("", {"topic-pattern": f"({first}|{second})", "metadata.columns": "dest=topic"})
    del opts["topic"]
    write(spark, opts, [(1, "a", second), (2, "b", first)], SCHEMA + ", dest STRING")

    assert [k["id"] for k, _ in records(bootstrap, first)] == [2]
    assert [k["id"] for k, _ in records(bootstrap, second)] == [1]


def test_row_naming_a_topic_outside_the_list_fails_naming_topic_and_key(spark, new_topic, options, bootstrap):
    first, second = new_topic(), new_topic()
    stray = f"not-listed-{uuid.uuid4().hex[:6]}"
    opts = options(f"{first};{second}", {"metadata.columns": "topic"})
    with pytest.raises(Exception, match=rf"the row with key \{{'id': 2\}} names topic '{stray}' in column 'topic'"):
        write(spark, opts, [(1, "a", first), (2, "b", stray)], ROUTED)
    assert consume_all(bootstrap, first) == [], "the batch holding the bad row is not written"


def test_several_topics_without_a_topic_column_are_refused_naming_the_option(spark, new_topic, options):
    opts = options(f"{new_topic()};{new_topic()}")
    with pytest.raises(Exception, match=r"add option 'metadata.columns' = 'topic'"):
        write(spark, opts, [(1, "a")], SCHEMA)
