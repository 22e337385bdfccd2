"""Writes, row to record, against the real broker: key and value columns, change types, writable metadata."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from tests.support.kafka_io import consume_messages
from tests.support.write_helpers import records, table, write

SCHEMA = "id INT, name STRING, price DOUBLE"
CHANGES = SCHEMA + ", _change_type STRING"


def test_key_is_the_key_columns_and_value_is_every_column(spark, new_topic, options, bootstrap):
    topic = new_topic()
    write(spark, options(topic, {"key.fields": "name;id"}), [(1, "a", 1.5)], SCHEMA)

    assert records(bootstrap, topic) == [({"name": "a", "id": 1}, {"id": 1, "name": "a", "price": 1.5})]
    assert list(records(bootstrap, topic)[0][0]) == ["name", "id"], "the key follows the key.fields order"


def test_except_key_leaves_the_key_out_of_the_value_and_the_prefix_out_of_the_key(spark, new_topic, options, bootstrap):
    topic = new_topic()
    opts = options(topic, {"key.fields": "k_id", "key.fields-prefix": "k_", "value.fields-include": "EXCEPT_KEY"})
    write(spark, opts, [(1, "a", 2.0)], "k_id INT, name STRING, price DOUBLE")

    assert records(bootstrap, topic) == [({"id": 1}, {"name": "a", "price": 2.0})]
    assert table(spark, opts, "k_id INT, name STRING, price DOUBLE") == [(1, "a", 2.0)]


def test_null_key_column_fails_the_write_showing_the_rows_key_columns(spark, new_topic, options):
    opts = options(new_topic(), {"key.fields": "id;name"})
    with pytest.raises(Exception, match=r"key column 'name' is null in the row with key \{'id': 2, 'name': None\}"):
        write(spark, opts, [(1, "a", 1.0), (2, None, 2.0)], SCHEMA)


def test_every_change_kind_maps_to_a_value_a_tombstone_or_nothing(spark, new_topic, options, bootstrap):
    topic = new_topic()
    kinds = [
        "upsert",
        "insert",
        "update_preimage",
        "update_postimage",
        "delete",
        "+I",
        "-U",
        "+U",
        "-D",
        None,
        "DELETE",
    ]
    rows = [(i, f"n{i}", float(i), kind) for i, kind in enumerate(kinds)]
    write(spark, options(topic), rows, CHANGES)

    written = [(key["id"], value is not None) for key, value in records(bootstrap, topic)]
    # Pre-images (update_preimage, -U) are dropped; deletes (delete, -D, any case) are tombstones.
    assert written == [
        (0, True),
        (1, True),
        (3, True),
        (4, False),
        (5, True),
        (7, True),
        (8, False),
        (9, True),
        (10, False),
    ]
    assert records(bootstrap, topic)[0][1] == {"id": 0, "name": "n0", "price": 0.0}, "the change column is no value"


def test_renamed_change_column_with_flink_row_kinds(spark, new_topic, options):
    opts = options(new_topic(), {"changelog.column": "op"})
    rows = [(1, "a", 1.0, "+I"), (2, "b", 2.0, "+I"), (1, "a", 1.0, "-U"), (1, "a2", 3.0, "+U"), (2, "b", 2.0, "-D")]
    write(spark, opts, rows, SCHEMA + ", op STRING")

    assert table(spark, opts, SCHEMA) == [(1, "a2", 3.0)]


def test_delta_change_data_feed_rows_write_directly(spark, new_topic, options):
    opts = options(new_topic(partitions=2))
    feed = spark.createDataFrame(
        [
            (1, "a", 1.0, "insert", 1),
            (2, "b", 2.0, "insert", 1),
            (3, "c", 3.0, "insert", 1),
            (1, "a", 1.0, "update_preimage", 2),
            (1, "a2", 10.0, "update_postimage", 2),
            (2, "b", 2.0, "delete", 3),
        ],
        CHANGES + ", _commit_version LONG",
    )
    # As a Delta table's CDF is read: order each key's changes by commit version, drop the CDF's own column.
    feed.repartition(2, "id").sortWithinPartitions("_commit_version").drop("_commit_version").write.format(
        "upsert-kafka"
    ).options(**opts).mode("append").save()

    assert table(spark, opts, SCHEMA) == [(1, "a2", 10.0), (3, "c", 3.0)]


def test_changelog_read_by_the_source_written_back_unchanged_gives_the_same_table(spark, new_topic, options):
    source, target = options(new_topic(partitions=3)), options(new_topic(partitions=2))
    write(spark, source, [(i, "v1", float(i), "upsert") for i in range(12)], CHANGES)
    write(spark, source, [(i, None, None, "delete") for i in range(0, 12, 3)], CHANGES)
    write(spark, source, [(i, "v2", i * 2.0, "upsert") for i in range(0, 12, 4)], CHANGES)

    changelog = spark.read.format("upsert-kafka").options(**source, **{"read.mode": "changelog"}).schema(CHANGES)
    changelog.load().write.format("upsert-kafka").options(**target).mode("append").save()

    kept = [(i, "v1", float(i)) for i in range(12) if i % 3 and i % 4]
    expected = sorted([*kept, (0, "v2", 0.0), (4, "v2", 8.0), (8, "v2", 16.0)])
    assert table(spark, source, SCHEMA) == expected
    assert table(spark, target, SCHEMA) == expected


def test_timestamp_and_headers_columns_go_to_the_record_envelope_not_the_value(spark, new_topic, options, bootstrap):
    topic = new_topic()
    opts = options(topic, {"metadata.columns": "event_time=timestamp, headers"})
    when = datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=timezone.utc)
    df = spark.createDataFrame(
        [(1, "a", when, {"trace": b"\x01\x02", "source": b"test"}), (2, "b", None, None)],
        "id INT, name STRING, event_time TIMESTAMP, headers MAP<STRING, BINARY>",
    )
    df.coalesce(1).write.format("upsert-kafka").options(**opts).mode("append").save()

    first, second = consume_messages(bootstrap, topic)
    assert first.value() == b'{"id":1,"name":"a"}' and second.value() == b'{"id":2,"name":"b"}'
    assert first.timestamp()[1] == int(when.timestamp() * 1000)
    assert sorted(first.headers()) == [("source", b"test"), ("trace", b"\x01\x02")]
    assert second.headers() is None
    assert second.timestamp()[1] > first.timestamp()[1], "a null timestamp is the time of sending"
    back = (
        spark.read.format("upsert-kafka")
        .options(**opts)
        .schema("id INT, name STRING, event_time TIMESTAMP, headers MAP<STRING, BINARY>")
        .load()
        .collect()
    )
    assert {r.id: r.event_time.timestamp() for r in back}[1] == when.timestamp()


HEADER_LIST = "ARRAY<STRUCT<key: STRING NOT NULL, value: BINARY>>"


def test_header_list_is_written_in_order_with_repeated_keys_and_read_back_the_same(
    spark, new_topic, options, bootstrap
):
    topic = new_topic()
    opts = options(topic, {"metadata.columns": "hl=header-list"})
    headers = [("x", b"1"), ("a", b""), ("x", None), ("x", b"3")]
    schema = f"id INT, name STRING, hl {HEADER_LIST}"
    write(spark, opts, [(1, "a", headers), (2, "b", None), (3, "c", [])], schema)

    first, second, third = consume_messages(bootstrap, topic)
    assert first.value() == b'{"id":1,"name":"a"}', "the headers are not in the value"
    assert first.headers() == headers
    assert second.headers() is None and third.headers() is None
    back = spark.read.format("upsert-kafka").options(**opts).schema(schema).load().collect()
    pairs = {r.id: [(e.key, None if e.value is None else bytes(e.value)) for e in r.hl] for r in back}
    assert pairs == {1: headers, 2: [], 3: []}, "a record without headers reads as an empty list"


def test_header_list_entry_without_a_key_fails_the_write_naming_the_row(spark, new_topic, options):
    opts = options(new_topic(), {"metadata.columns": "hl=header-list"})
    schema = "id INT, name STRING, hl ARRAY<STRUCT<key: STRING, value: BINARY>>"
    with pytest.raises(
        Exception,
        match=r"column 'hl' \(header-list\) has a header without a key in the row with key "
        r"\{'id': 2\}",
    ):
        write(spark, opts, [(1, "a", [("k", b"v")]), (2, "b", [(None, b"v")])], schema)


def test_headers_and_header_list_together_in_a_write_are_one_option_error(spark, new_topic, options):
    opts = options(new_topic(), {"metadata.columns": "headers, hl=header-list"})
    schema = f"id INT, name STRING, headers MAP<STRING, BINARY>, hl {HEADER_LIST}"
    with pytest.raises(Exception, match=r"columns 'headers' and 'hl' both give the record headers of a write"):
        write(spark, opts, [(1, "a", None, None)], schema)
