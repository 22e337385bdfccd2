"""Filter pushdown of batch reads (`spark.sql.python.filterPushdown.enabled`): key look-ups read only the
partitions their keys hash to; `topic`, `partition`, `offset` and `timestamp` filters narrow the ranges; the
rows are the same as without pushdown, and a read works whichever way the setting is."""

from __future__ import annotations

import datetime
import json

import orjson
import pyspark.sql.datasource as ds  # its Filter classes are pyspark 4.1+ (this module runs on the newest only)
import pytest
from confluent_kafka import Producer
from pyspark_upsert_kafka.kafka.partitioner import java_partition
from pyspark_upsert_kafka.read.range_calculator import PartitionRange
from pyspark_upsert_kafka.read.source import UpsertKafkaBatchReader, UpsertKafkaLookupReader

from tests.support.kafka_io import consume_all
from tests.support.read_helpers import batch_reader, load, read_spec, rec, recent_minute, send

PUSHDOWN = "spark.sql.python.filterPushdown.enabled"
PARTITIONS = 8
TABLE = "id INT, name STRING"
CHANGES = "id INT, name STRING, part INT, pos BIGINT, ts TIMESTAMP, _change_type STRING"
META = {"metadata.columns": "part=partition, pos=offset, ts=timestamp"}
T0 = recent_minute()


@pytest.fixture
def pushdown(spark):
    """Filter pushdown on for the test (the session's setting restored after)."""
    before = spark.conf.get(PUSHDOWN)
    spark.conf.set(PUSHDOWN, "true")
    yield
    spark.conf.set(PUSHDOWN, before)


@pytest.fixture
def keyed_topic(new_topic, bootstrap) -> str:
    """100 keys over 8 partitions by the Java partitioner, each written twice (name 'a' then 'b'), key 7
    deleted at the end; record i has timestamp T0 + i ms."""
    topic = new_topic(partitions=PARTITIONS)
    records = [rec(i, name, ts=T0 + n * 100 + i) for n, name in enumerate("ab") for i in range(100)]
    send(bootstrap, topic, [*records, rec(7, None, ts=T0 + 300)])
    return topic


def _rows(df) -> list[tuple]:
    return sorted((tuple(r) for r in df.collect()), key=repr)  # repr: rows may hold None


def _both_ways(spark, df_of) -> tuple[list[tuple], int, list[tuple], int]:
    """(rows, Spark partitions) of the same query with pushdown on, then off."""
    spark.conf.set(PUSHDOWN, "true")
    on = df_of()
    rows_on, tasks_on = _rows(on), on.rdd.getNumPartitions()
    spark.conf.set(PUSHDOWN, "false")
    off = df_of()
    return rows_on, tasks_on, _rows(off), off.rdd.getNumPartitions()


def _planned(options: dict, schema: str, filters: list) -> list[PartitionRange]:
    """The ranges the pushdown reader plans for `filters`, as Spark's planning worker would get them."""
    spec = read_spec(options, schema)
    reader = UpsertKafkaLookupReader(spec)
    assert list(reader.pushFilters(filters)) == filters  # every filter stays with Spark
    return [r for r in reader.partitions() if isinstance(r, PartitionRange)]


# -- the partitioner -------------------------------------------------------------------------------------


def test_java_partition_is_kafkas_murmur2():
    # Kafka's own test vectors for Utils.murmur2 (as signed ints) and toPositive(h) % n.
    vectors = {b"21": -973932308, b"foobar": -790332482, b"abc": 479470107, b"a-little-bit-long-string": -985981536}
    for key, signed in vectors.items():
        assert java_partition(key, 2**31 - 1) == (signed & 0x7FFFFFFF) % (2**31 - 1)


def test_java_partition_agrees_with_librdkafka_for_every_key(new_topic, bootstrap):
    topic = new_topic(partitions=7)
    keys = [orjson.dumps({"id": i}) for i in range(300)] + [bytes([i]) * (i % 9) for i in range(1, 40)]
    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random"})
    for key in keys:
        producer.produce(topic, b"v", key)
    assert producer.flush(30) == 0
    placed = {key: partition for partition, _, key, _ in consume_all(bootstrap, topic)}
    assert len(placed) == len(set(keys))
    assert {key: java_partition(key, 7) for key in placed} == placed


# -- key look-ups ----------------------------------------------------------------------------------------


def test_a_key_lookup_reads_only_the_partition_of_its_key(spark, options, keyed_topic):
    rows_on, tasks_on, rows_off, tasks_off = _both_ways(
        spark, lambda: load(spark, options(keyed_topic), TABLE).where("id = 42")
    )
    assert rows_on == rows_off == [(42, "b")]
    assert (tasks_on, tasks_off) == (1, PARTITIONS)


def test_an_in_list_of_keys_reads_only_their_partitions_and_a_deleted_key_stays_deleted(spark, options, keyed_topic):
    ids = (3, 7, 42, 99)
    wanted = len({java_partition(orjson.dumps({"id": i}), PARTITIONS) for i in ids})
    query = lambda: load(spark, options(keyed_topic), TABLE).where(f"id IN {ids}")  # noqa: E731
    rows_on, tasks_on, rows_off, tasks_off = _both_ways(spark, query)
    assert rows_on == rows_off == [(3, "b"), (42, "b"), (99, "b")]
    assert tasks_on == wanted < tasks_off


def test_a_changelog_key_lookup_keeps_every_change_of_the_key(spark, options, keyed_topic):
    opts = options(keyed_topic, {"read.mode": "changelog"} | META)
    query = lambda: load(spark, opts, CHANGES).where("id = 7").select("name", "_change_type")  # noqa: E731
    rows_on, tasks_on, rows_off, _ = _both_ways(spark, query)
    assert rows_on == rows_off == sorted([("a", "upsert"), ("b", "upsert"), (None, "delete")], key=repr)
    assert tasks_on == 1


def test_keys_filtered_otherwise_or_partly_read_every_partition(options, keyed_topic):
    every = set(range(PARTITIONS))
    for filters in (
        [ds.GreaterThan(("id",), 90)],  # not a look-up
        [ds.In(("name",), ("a",))],  # not a key column
    ):
        assert {r.partition for r in _planned(options(keyed_topic), TABLE, filters)} == every
    off = options(keyed_topic, {"scan.filter.key-partitions": "false"})
    assert {r.partition for r in _planned(off, TABLE, [ds.EqualTo(("id",), 42)])} == every


def test_a_composite_key_narrows_only_when_every_key_column_is_looked_up(new_topic, bootstrap, options):
    topic = new_topic(partitions=PARTITIONS)
    key = lambda i: orjson.dumps({"id": i, "region": "eu"})  # noqa: E731
    send(
        bootstrap,
        topic,
        [(key(i), orjson.dumps({"id": i, "region": "eu", "name": "n"}), None, None) for i in range(40)],
    )
    opts = options(topic, {"key.fields": "id;region"})
    schema = "id INT, region STRING, name STRING"
    whole = _planned(opts, schema, [ds.EqualTo(("id",), 5), ds.EqualTo(("region",), "eu")])
    assert [r.partition for r in whole] == [java_partition(key(5), PARTITIONS)]
    assert len(_planned(opts, schema, [ds.EqualTo(("id",), 5)])) == PARTITIONS


def test_a_key_lookup_of_assigned_partitions_hashes_over_the_whole_topic(options, keyed_topic):
    """With `assign`, a key still hashes over every partition of its topic, not over those read."""
    home = java_partition(orjson.dumps({"id": 42}), PARTITIONS)
    other = (home + 1) % PARTITIONS
    unnamed = {k: v for k, v in options(keyed_topic).items() if k != "topic"}  # `assign` names it instead
    assigned = lambda *ps: unnamed | {"assign": json.dumps({keyed_topic: list(ps)})}  # noqa: E731
    planned = _planned(assigned(other, home), TABLE, [ds.EqualTo(("id",), 42)])
    assert [r.partition for r in planned] == [home]
    assert _planned(assigned(other), TABLE, [ds.EqualTo(("id",), 42)]) == []


def test_a_key_lookup_works_with_pushdown_off_and_on(spark, options, keyed_topic, pushdown):
    """A reader implementing pushFilters fails every read while pushdown is off: the source hands Spark one
    only when it is on."""
    spark.conf.set(PUSHDOWN, "false")
    assert _rows(load(spark, options(keyed_topic), TABLE).where("id = 1")) == [(1, "b")]
    spark.conf.set(PUSHDOWN, "true")
    assert _rows(load(spark, options(keyed_topic), TABLE).where("id = 1")) == [(1, "b")]
    assert type(batch_reader(options(keyed_topic), TABLE)) is UpsertKafkaBatchReader  # not called by Spark


# -- metadata filters ------------------------------------------------------------------------------------


def test_partition_and_offset_filters_narrow_a_changelog_read(spark, options, keyed_topic):
    opts = options(keyed_topic, {"read.mode": "changelog"} | META)
    planned = _planned(
        opts, CHANGES, [ds.EqualTo(("part",), 3), ds.GreaterThanOrEqual(("pos",), 5), ds.LessThan(("pos",), 9)]
    )
    assert [(r.partition, r.start, r.end) for r in planned] == [(3, 5, 9)]

    query = lambda: load(spark, opts, CHANGES).where("part = 3 AND pos >= 5 AND pos < 9")  # noqa: E731
    rows_on, tasks_on, rows_off, _ = _both_ways(spark, query)
    assert rows_on == rows_off and [r[3] for r in rows_on] == [5, 6, 7, 8] and tasks_on == 1


def test_offset_filters_do_not_narrow_a_table_read(options, keyed_topic):
    """A table's rows are the latest record per key: a narrower range would bring back overwritten values."""
    opts = options(keyed_topic, {"metadata.columns": "pos=offset"})
    planned = _planned(opts, "id INT, name STRING, pos BIGINT", [ds.LessThan(("pos",), 3)])
    assert all(r.start == 0 for r in planned) and len(planned) == PARTITIONS


def test_a_timestamp_lower_bound_starts_each_partition_at_its_first_record_from_then(spark, options, keyed_topic):
    opts = options(keyed_topic, {"read.mode": "changelog"} | META)
    since = datetime.datetime.fromtimestamp((T0 + 100) / 1000, datetime.timezone.utc)  # the second writes
    planned = _planned(opts, CHANGES, [ds.GreaterThanOrEqual(("ts",), since)])
    assert sum(r.end - r.start for r in planned) == 101  # 100 'b' records and the delete

    iso = since.strftime("%Y-%m-%d %H:%M:%S.%fZ")  # with its zone: a literal without one is the session's
    query = lambda: load(spark, opts, CHANGES).where(f"ts >= TIMESTAMP'{iso}'")  # noqa: E731
    rows_on, _, rows_off, _ = _both_ways(spark, query)
    assert rows_on == rows_off and len(rows_on) == 101
