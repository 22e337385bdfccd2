"""Which group id the range consumers give librdkafka: groupIdPrefix, properties.group.id (kafka.group.id) or
ours. They never join the group nor commit to it."""

from __future__ import annotations

import pytest
from confluent_kafka.admin import AdminClient
from pyspark_upsert_kafka import OptionError, UpsertKafkaDataSource
from pyspark_upsert_kafka.pool import POOL
from pyspark_upsert_kafka.read.source import read_range
from pyspark_upsert_kafka.spark_internals import parse_schema

from tests.support.read_helpers import CHANGES, rec, send


def _group_ids_of_range_consumers(opts: dict) -> set[str]:
    """Read every range of a batch read in this process; the group ids of the consumers it pooled."""
    POOL.clear()
    reader = UpsertKafkaDataSource({k.lower(): v for k, v in opts.items()}).reader(parse_schema(CHANGES))
    for partition in reader.partitions():
        for batch in read_range(reader.spec, partition):
            assert batch.num_rows >= 0
    keys = [p.key for p in list(POOL._idle.values()) if p.key[0] == "consumer"]
    POOL.clear()
    return {value for key in keys for name, value in key[1:] if name == "group.id"}


@pytest.mark.parametrize(
    ("more", "group"),
    [
        ({}, "pyspark-upsert-kafka"),
        ({"groupIdPrefix": "team-a-spark"}, "team-a-spark"),
        ({"kafka.group.id": "team-a-orders"}, "team-a-orders"),
    ],
)
def test_range_consumers_use_the_group_id_given_and_never_join_it(spark, new_topic, options, bootstrap, more, group):
    topic = new_topic(partitions=2)
    send(bootstrap, topic, [rec(i, partition=i % 2) for i in range(4)])
    assert _group_ids_of_range_consumers(options(topic, {"read.mode": "changelog"} | more)) == {group}
    listed = AdminClient({"bootstrap.servers": bootstrap}).list_consumer_groups(request_timeout=30).result()
    assert group not in {g.group_id for g in listed.valid}, "a range consumer never joins its group"


def test_group_id_prefix_and_kafka_group_id_together_are_refused(spark, options):
    with pytest.raises(OptionError, match=r"'groupIdPrefix' and 'properties\.group\.id'"):
        UpsertKafkaDataSource(
            {k.lower(): v for k, v in options("t", {"groupIdPrefix": "a", "kafka.group.id": "b"}).items()}
        ).reader(parse_schema(CHANGES))
