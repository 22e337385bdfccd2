"""What rows a read returns: table and changelog modes, compaction, key and value field layouts, records
with a null key, and record metadata columns."""

from __future__ import annotations

import datetime as dt
import logging

import orjson
import pytest
from pyspark.sql.types import IntegerType, StringType, StructField, StructType
from pyspark_upsert_kafka.read.fetch import Records
from pyspark_upsert_kafka.read.range_calculator import PartitionRange
from pyspark_upsert_kafka.read.record_decoder import RecordRangeDecoder
from pyspark_upsert_kafka.read.spec import parse_read_spec

from tests.support.read_helpers import rec, recent_minute, rows_of, run_available_now, send, stream

T0 = recent_minute()  # recent: the broker's retention would delete records years old


def _raw(key: dict | None, value: dict | None) -> tuple:
    return (key and orjson.dumps(key), value and orjson.dumps(value), None, None)


def test_changelog_column_is_named_by_the_option(spark, new_topic, options, bootstrap):
    topic = new_topic()
    send(bootstrap, topic, [rec(1, "a"), rec(1, None)])
    opts = options(topic, {"read.mode": "changelog", "changelog.column": "op"})
    assert rows_of(spark, opts, "id INT, name STRING, op STRING") == [(1, "a", "upsert"), (1, None, "delete")]


def test_table_mode_keeps_the_latest_value_per_key_and_drops_deleted_keys(spark, new_topic, options, bootstrap):
    topic = new_topic(partitions=2)
    records = [rec(1, "a"), rec(2, "b"), rec(3, "c"), rec(1, "a2"), rec(2, None), rec(3, None), rec(3, "c3")]
    send(bootstrap, topic, records)
    assert sorted(rows_of(spark, options(topic), "id INT, name STRING")) == [(1, "a2"), (3, "c3")]


def test_compact_changelog_keeps_the_last_change_per_key_in_offset_order(spark, new_topic, options, bootstrap):
    topic = new_topic()
    send(bootstrap, topic, [rec(1, "a"), rec(2, "b"), rec(1, "c"), rec(2, None), rec(3, "d"), rec(1, "e")])
    opts = options(topic, {"read.mode": "changelog", "changelog.compact": "true"})
    assert rows_of(spark, opts) == [(2, None, "delete"), (3, "d", "upsert"), (1, "e", "upsert")]


def test_compact_stream_keeps_the_last_change_per_key_of_each_micro_batch(
    spark, new_topic, options, bootstrap, tmp_path
):
    topic = new_topic()
    send(bootstrap, topic, [rec(1, "a"), rec(1, "b"), rec(2, "x"), rec(1, "c"), rec(1, None), rec(2, "y")])
    opts = options(topic, {"changelog.compact": "true", "scan.max-records-per-batch": "3"})
    sink = run_available_now(stream(spark, opts), str(tmp_path / "cp"))
    assert [sink.by_batch[b] for b in sink.batches] == [
        [(1, "b", "upsert"), (2, "x", "upsert")],
        [(1, None, "delete"), (2, "y", "upsert")],
    ]


def test_value_fields_include_all_takes_key_columns_from_the_key(spark, new_topic, options, bootstrap):
    topic = new_topic()
    send(bootstrap, topic, [_raw({"id": 1}, {"id": 99, "name": "a"}), _raw({"id": 2}, {"name": "b"})])
    assert sorted(rows_of(spark, options(topic), "id INT, name STRING")) == [(1, "a"), (2, "b")]


def test_except_key_reads_non_key_columns_from_the_value_only(spark, new_topic, options, bootstrap):
    topic = new_topic()
    send(bootstrap, topic, [_raw({"id": 1, "region": "eu"}, {"name": "a", "id": 5, "region": "us"})])
    opts = options(topic, {"key.fields": "id;region", "value.fields-include": "EXCEPT_KEY"})
    assert rows_of(spark, opts, "id INT, region STRING, name STRING") == [(1, "eu", "a")]


def test_key_fields_prefix_keeps_key_and_value_fields_of_one_name_apart(spark, new_topic, options, bootstrap):
    topic = new_topic()
    send(bootstrap, topic, [_raw({"id": 1}, {"id": "value-side", "name": "a"})])
    opts = options(topic, {"key.fields": "k_id", "key.fields-prefix": "k_", "value.fields-include": "EXCEPT_KEY"})
    assert rows_of(spark, opts, "k_id INT, id STRING, name STRING") == [(1, "value-side", "a")]


def test_key_fields_prefix_without_except_key_is_rejected(spark, new_topic, options):
    opts = options(new_topic(), {"key.fields": "k_id", "key.fields-prefix": "k_"})
    with pytest.raises(Exception, match=r"'key\.fields-prefix' requires 'value\.fields-include' to be EXCEPT_KEY"):
        rows_of(spark, opts, "k_id INT, name STRING")


def test_records_with_a_null_key_are_skipped_in_a_changelog(spark, new_topic, options, bootstrap):
    topic = new_topic()
    send(bootstrap, topic, [rec(1, "a"), _raw(None, {"id": 7, "name": "keyless"}), rec(2, "b")])
    assert rows_of(spark, options(topic, {"read.mode": "changelog"})) == [(1, "a", "upsert"), (2, "b", "upsert")]


def test_skipped_null_key_records_are_counted_in_the_task_log(caplog):
    schema = StructType([StructField(n, t) for n, t in (("id", IntegerType()), ("_change_type", StringType()))])
    spec = parse_read_spec(
        {"topic": "t", "properties.bootstrap.servers": "b:1", "key.fields": "id", "read.mode": "changelog"},
        schema,
        streaming=False,
    )
    chunk = Records([None, b'{"id":1}', None], [b"{}", b"{}", None], [0, 1, 2])
    with caplog.at_level(logging.WARNING, logger="upsert_kafka"):
        batches = list(RecordRangeDecoder(spec, PartitionRange("t", 3, 0, 3)).changelog([chunk]))
    assert [b.to_pylist() for b in batches] == [[{"id": 1, "_change_type": "upsert"}]]
    assert "topic 't' partition 3 offsets [0, 3): skipped 2 record(s) with a null key" in caplog.text


def test_metadata_columns_carry_each_records_envelope(spark, new_topic, options, bootstrap):
    topic = new_topic(partitions=2)
    send(
        bootstrap,
        topic,
        [rec(1, "a", partition=1, ts=T0), rec(2, "b", partition=1, ts=T0 + 5)],
        headers=[("trace", b"t-1"), ("empty", b"")],
    )
    opts = options(
        topic,
        {
            "schema": "id INT, name STRING",
            "read.mode": "table",
            "metadata.columns": "topic, partition, offset, event_time=timestamp, timestamp-type, headers, leader-epoch",
        },
    )
    df = spark.read.format("upsert-kafka").options(**opts).load()
    assert df.columns == [
        "id",
        "name",
        "topic",
        "partition",
        "offset",
        "event_time",
        "timestamp-type",
        "headers",
        "leader-epoch",
    ]
    rows = sorted(tuple(r) for r in df.collect())
    utc = dt.timezone.utc
    at = [dt.datetime.fromtimestamp(ms / 1000, utc).replace(tzinfo=None) for ms in (T0, T0 + 5)]
    headers = {"trace": bytearray(b"t-1"), "empty": bytearray(b"")}
    assert [r[:7] for r in rows] == [
        (1, "a", topic, 1, 0, at[0], "CreateTime"),
        (2, "b", topic, 1, 1, at[1], "CreateTime"),
    ]
    assert [r[7] for r in rows] == [headers, headers]
    assert all(isinstance(r[8], int) and r[8] >= 0 for r in rows)


HEADER_LIST = "ARRAY<STRUCT<key: STRING NOT NULL, value: BINARY>>"


def _header_pairs(entries) -> list[tuple[str, bytes | None]]:
    return [(e.key, None if e.value is None else bytes(e.value)) for e in entries]


def test_header_list_keeps_the_records_order_repeated_keys_and_null_values(
    spark, new_topic, options, bootstrap, tmp_path
):
    topic = new_topic()
    headers = [("trace", b"t-1"), ("dup", b"a"), ("dup", None), ("trace", b"t-2"), ("empty", b""), ("dup", b"c")]
    send(bootstrap, topic, [rec(1, "a"), rec(2, "b")], headers=headers)
    send(bootstrap, topic, [rec(3, "c")])  # no headers: an empty list
    opts = options(
        topic, {"schema": "id INT, name STRING", "read.mode": "changelog", "metadata.columns": "header-list"}
    )

    df = spark.read.format("upsert-kafka").options(**opts).load()
    assert df.schema["header-list"].dataType.simpleString() == "array<struct<key:string,value:binary>>"
    assert not df.schema["header-list"].dataType.elementType["key"].nullable
    rows = sorted((r.id, _header_pairs(r["header-list"])) for r in df.collect())
    assert rows == [(1, headers), (2, headers), (3, [])]

    # The same in a stream, with the column declared by .schema(...) and renamed.
    streamed = stream(
        spark,
        options(topic, {"metadata.columns": "hl=header-list"}),
        f"id INT, name STRING, hl {HEADER_LIST}, _change_type STRING",
    )
    sink = run_available_now(streamed, str(tmp_path / "cp"))
    assert sorted((r[0], _header_pairs(r[2])) for r in sink.rows) == [(1, headers), (2, headers), (3, [])]


def test_metadata_column_clashing_with_a_data_column_is_rejected(spark, new_topic, options):
    opts = options(new_topic(), {"schema": "id INT, offset BIGINT", "metadata.columns": "offset"})
    clash = r"option 'metadata\.columns': column 'offset' clashes with the data column.*'record_offset=offset'"
    with pytest.raises(Exception, match=clash):
        spark.read.format("upsert-kafka").options(**opts).load().collect()


def test_metadata_column_of_the_wrong_type_names_the_expected_type(spark, new_topic, options):
    opts = options(new_topic(), {"metadata.columns": "offset"})
    with pytest.raises(Exception, match=r"column 'offset' holds the record offset and must have type BIGINT"):
        rows_of(spark, opts, "id INT, name STRING, offset INT")
