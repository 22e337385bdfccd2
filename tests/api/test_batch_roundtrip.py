"""Batch write and read against the real broker: upserts, tombstones, table and changelog reads."""

from __future__ import annotations

import orjson
import pytest

from tests.support.kafka_io import consume_all, produce

pytestmark = pytest.mark.compat  # runs on every supported pyspark (tests/compat)

SCHEMA = "id INT, name STRING, price DOUBLE"
CHANGES = SCHEMA + ", _change_type STRING"


def write(spark, opts: dict, rows: list[tuple], schema: str = CHANGES) -> None:
    """Write rows in their order: one Spark partition, since Spark keeps no order across tasks."""
    df = spark.createDataFrame(rows, schema).coalesce(1)
    df.write.format("upsert-kafka").options(**opts).mode("append").save()


def read_table(spark, opts: dict, schema: str = SCHEMA) -> list[tuple]:
    rows = spark.read.format("upsert-kafka").options(**opts).schema(schema).load().collect()
    return sorted(tuple(r) for r in rows)


def test_batch_read_is_latest_value_per_key_without_deleted_keys(spark, new_topic, options):
    opts = options(new_topic(partitions=3))
    write(spark, opts, [(1, "a", 1.0, "upsert"), (2, "b", 2.0, "upsert"), (3, "c", 3.0, "upsert")])
    write(spark, opts, [(1, "a2", 10.0, "upsert"), (2, None, None, "delete"), (4, "d", 4.0, "insert")])
    write(spark, opts, [(1, "a3", 100.0, "update_postimage"), (3, "c", 3.0, "update_preimage")])

    assert read_table(spark, opts) == [(1, "a3", 100.0), (3, "c", 3.0), (4, "d", 4.0)]


def test_delete_row_is_written_as_a_tombstone_with_the_json_key(spark, new_topic, options, bootstrap):
    topic = new_topic()
    write(spark, options(topic), [(7, "x", 1.5, "upsert"), (7, None, None, "delete")])

    records = consume_all(bootstrap, topic)
    assert [(orjson.loads(k), v and orjson.loads(v)) for _, _, k, v in records] == [
        ({"id": 7}, {"id": 7, "name": "x", "price": 1.5}),
        ({"id": 7}, None),
    ]


def test_write_without_change_column_writes_every_row_as_an_upsert(spark, new_topic, options, bootstrap):
    topic = new_topic()
    write(spark, options(topic), [(1, "a", 1.0), (2, None, 2.0)], schema=SCHEMA)

    values = sorted(orjson.loads(v)["id"] for _, _, _, v in consume_all(bootstrap, topic))
    assert values == [1, 2]
    assert read_table(spark, options(topic)) == [(1, "a", 1.0), (2, None, 2.0)]


def test_changelog_read_returns_every_record_in_offset_order_with_its_change_type(spark, new_topic, options):
    opts = options(new_topic(), {"read.mode": "changelog"})
    write(spark, opts, [(1, "a", 1.0, "upsert"), (1, "b", 2.0, "upsert"), (1, None, None, "delete")])

    rows = spark.read.format("upsert-kafka").options(**opts).schema(CHANGES).load().collect()
    assert [tuple(r) for r in rows] == [
        (1, "a", 1.0, "upsert"),
        (1, "b", 2.0, "upsert"),
        (1, None, None, "delete"),
    ]


def test_schema_option_adds_the_change_column(spark, new_topic, options):
    opts = options(new_topic(), {"read.mode": "changelog", "schema": SCHEMA})
    write(spark, opts, [(5, "e", 5.0, "upsert")])

    df = spark.read.format("upsert-kafka").options(**opts).load()
    assert df.columns == ["id", "name", "price", "_change_type"]
    assert [tuple(r) for r in df.collect()] == [(5, "e", 5.0, "upsert")]


def test_two_encodings_of_one_key_are_one_table_row(spark, new_topic, options, bootstrap):
    topic = new_topic()
    produce(bootstrap, topic, [(b'{"id":1}', b'{"name":"old","price":1}'), (b'{ "id" : 1 }', b'{"name":"new"}')])

    assert read_table(spark, options(topic)) == [(1, "new", None)]


def test_records_with_a_null_key_are_skipped(spark, new_topic, options, bootstrap):
    topic = new_topic()
    produce(bootstrap, topic, [(None, b'{"id":9,"name":"keyless"}'), (b'{"id":1}', b'{"name":"kept"}')])

    assert read_table(spark, options(topic)) == [(1, "kept", None)]


def test_undecodable_value_fails_naming_topic_partition_offset_and_bytes(spark, new_topic, options, bootstrap):
    topic = new_topic()
    produce(bootstrap, topic, [(b'{"id":1}', b'{"name":"ok"}'), (b'{"id":2}', b'{"name": oops}')])

    with pytest.raises(Exception, match=rf"topic '{topic}' partition 0 offset 1 with format 'json'") as err:
        read_table(spark, options(topic, {"read.mode": "changelog"}), CHANGES)
    assert "b'{\"name\": oops}'" in str(err.value)
    assert "value.json.ignore-parse-errors" in str(err.value)


def test_ignore_parse_errors_skips_only_the_bad_records(spark, new_topic, options, bootstrap):
    topic = new_topic()
    produce(
        bootstrap,
        topic,
        [(b'{"id":1}', b'{"name":"a"}'), (b'{"id":2}', b"\x00garbage"), (b'{"id":3}', b'{"name":"c"}')],
    )

    opts = options(topic, {"value.json.ignore-parse-errors": "true"})
    assert read_table(spark, opts) == [(1, "a", None), (3, "c", None)]


def test_empty_topic_reads_as_an_empty_table(spark, new_topic, options):
    assert read_table(spark, options(new_topic(partitions=2))) == []


def test_write_to_a_missing_topic_succeeds_when_the_brokers_create_topics(spark, options, bootstrap):
    import uuid

    topic = f"auto-created-{uuid.uuid4().hex[:8]}"
    write(spark, options(topic), [(1, "a", 1.0, "upsert")])
    assert [orjson.loads(k) for _, _, k, _ in consume_all(bootstrap, topic)] == [{"id": 1}]
