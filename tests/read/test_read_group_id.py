"""Which group id the range consumers give librdkafka: groupIdPrefix, properties.group.id (kafka.group.id) or
ours. They never join the group nor commit to it."""

from __future__ import annotations

import pytest
from confluent_kafka.admin import AdminClient
from pyspark_upsert_kafka import OptionError
from pyspark_upsert_kafka.kafka.pool import CLIENT_POOL
from pyspark_upsert_kafka.read.task import read_range

from tests.support.read_helpers import batch_reader, rec, send


def _read_by_range_consumers(opts: dict) -> tuple[int, set[str]]:
    """Read every range of a batch read in this process: the rows read and the group ids of the consumers it
    pooled."""
    CLIENT_POOL.clear()
    reader = batch_reader(opts)
    rows = sum(batch.num_rows for partition in reader.partitions() for batch in read_range(reader.spec, partition))
    keys = [p.key for p in list(CLIENT_POOL._idle.values()) if p.key[0] == "consumer"]
    CLIENT_POOL.clear()
    return rows, {value for key in keys for name, value in key[1:] if name == "group.id"}


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
    rows, groups = _read_by_range_consumers(options(topic, {"read.mode": "changelog"} | more))
    assert (rows, groups) == (4, {group}), "every record read, by consumers of the group given"
    listed = AdminClient({"bootstrap.servers": bootstrap}).list_consumer_groups(request_timeout=30).result()
    assert group not in {g.group_id for g in listed.valid}, "a range consumer never joins its group"


def test_group_id_prefix_and_kafka_group_id_together_are_refused(spark, options):
    with pytest.raises(OptionError, match=r"'groupIdPrefix' and 'properties\.group\.id'"):
        batch_reader(options("t", {"groupIdPrefix": "a", "kafka.group.id": "b"}))
