"""Records of a key land in the partition the Java client's default partitioner picks."""

from __future__ import annotations

import orjson

from integration.kafka import java_partitions
from tests.support.kafka_io import consume_all


def test_sink_partition_of_every_key_equals_the_java_clients(spark, new_topic, options, bootstrap):
    ours, theirs = new_topic(partitions=7), new_topic(partitions=7)
    rows = [(i, f"name-{i}" * (i % 4)) for i in range(300)]
    spark.createDataFrame(rows, "id INT, name STRING").write.format("upsert-kafka").options(
        **options(ours, {"key.fields": "id;name"})
    ).mode("append").save()

    written = {key: partition for partition, _, key, _ in consume_all(bootstrap, ours)}
    assert len(written) == 300
    keys = list(written)
    assert orjson.loads(keys[0]).keys() == {"id", "name"}

    java = dict(zip(keys, java_partitions(bootstrap, theirs, keys)))
    assert java == written
    assert len(set(java.values())) == 7
