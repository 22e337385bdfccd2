"""A record that does not decode, per format, through a real read: the error names the topic, partition,
offset, key or value, the format, the reason and the first bytes (escaped); with ignore-parse-errors the
record is skipped, and the task logs how many it skipped."""

from __future__ import annotations

import logging
import re
from decimal import Decimal

import pyarrow as pa
import pytest
from pyspark_upsert_kafka.formats import CodecContext, make_codec
from pyspark_upsert_kafka.formats.flink_types import primary_key_not_null
from pyspark_upsert_kafka.read.fetch import Records
from pyspark_upsert_kafka.read.range_calculator import PartitionRange
from pyspark_upsert_kafka.read.record_decoder import RecordRangeDecoder

from tests.support.kafka_io import produce
from tests.support.read_helpers import read_spec

SCHEMA = "id INT, name STRING"
ROWS = pa.RecordBatch.from_pylist(
    [{"id": 1, "name": "a"}, {"id": 3, "name": "c"}], pa.schema([("id", pa.int32()), ("name", pa.string())])
)
RAW_ROWS = pa.RecordBatch.from_pylist([{"v": 1}, {"v": 3}], pa.schema([("v", pa.int32())]))

# format -> (extra options, a bad value, a fragment of the reason)
CASES = {
    "json": ({}, b'{"id": 2, "name": oops}', "unexpected character"),
    "csv": ({}, b"two,b", "column 0"),
    "avro": ({}, b"\x04\x02", "malformed or truncated avro"),
    "avro-confluent": ({}, b"\x01\x00\x00\x00\x01", "not in the confluent wire format"),
    "raw": ({"value.fields-include": "EXCEPT_KEY"}, b"\x00\x01\x02", "expected 4 byte(s) for int32, got 3"),
}


def value_options(fmt: str, registry_url: str) -> dict[str, str]:
    more = {"value.format": fmt, **CASES[fmt][0]}
    if fmt == "avro-confluent":
        more["value.avro-confluent.url"] = registry_url
    return more


def good_values(fmt: str, opts: dict[str, str], topic: str) -> list[bytes]:
    """Two good values, written by the format's own encoder for the table's value columns (the key 'id' NOT NULL)."""
    prefix = f"value.{fmt}."
    codec_options = {k[len(prefix) :]: v for k, v in opts.items() if k.startswith(prefix)}
    codec = make_codec(fmt, "value.format", codec_options, CodecContext("value", (topic,)))
    batch = RAW_ROWS if fmt == "raw" else ROWS
    return codec.encoder(primary_key_not_null(batch.schema, ["id"])).encode(batch)


def read(spark, opts: dict, schema: str) -> list[tuple]:
    return sorted(tuple(r) for r in spark.read.format("upsert-kafka").options(**opts).schema(schema).load().collect())


@pytest.mark.parametrize("fmt", list(CASES))
def test_undecodable_value_fails_naming_where_it_is_and_is_skipped_on_request(
    spark, new_topic, options, bootstrap, registry_url, fmt
):
    topic = new_topic()
    opts = options(topic, value_options(fmt, registry_url))
    schema = "id INT, v INT" if fmt == "raw" else SCHEMA
    first, third = good_values(fmt, opts, topic)
    bad, reason = CASES[fmt][1], CASES[fmt][2]
    produce(bootstrap, topic, [(b'{"id":1}', first), (b'{"id":2}', bad), (b'{"id":3}', third)])

    with pytest.raises(Exception) as err:
        read(spark, opts, schema)
    message = str(err.value)
    assert f"cannot decode the value of the record at topic '{topic}' partition 0 offset 1 with format '{fmt}'" in (
        message
    )
    assert reason in message.lower()
    shown = bad.decode("latin-1").encode("unicode_escape").decode().replace("\\\\", "\\")
    assert f"value bytes: b'{shown}'" in message
    assert f"set 'value.{fmt}.ignore-parse-errors' to true" in message

    skipping = {**opts, f"value.{fmt}.ignore-parse-errors": "true"}
    expected = [(1, 1), (3, 3)] if fmt == "raw" else [(1, "a"), (3, "c")]
    assert read(spark, skipping, schema) == expected


@pytest.mark.parametrize(
    ("fmt", "good", "bad"),
    [
        ("json", (b'{"price":1.5}', b'{"price":-999.99}'), b'{"price":12345678901234567890}'),
        ("json", (b'{"price":1.5}', b'{"price":-999.99}'), b'{"price":999.995}'),  # rounds to 1000.00
        ("csv", (b"1.5", b"-999.99"), b"1000"),
    ],
)
def test_a_number_too_wide_for_its_decimal_column_is_skipped_on_request_or_named(
    spark, new_topic, options, bootstrap, fmt, good, bad
):
    """A table read of a DECIMAL(5,2) column once died with a bare ArrowInvalid on one 20-digit value, even
    with ignore-parse-errors (and csv let 1000.00 into DECIMAL(5,2))."""
    topic = new_topic()
    produce(bootstrap, topic, [(b'{"id":1}', good[0]), (b'{"id":2}', bad), (b'{"id":3}', good[1])])
    opts = options(topic, {"value.format": fmt, "value.fields-include": "EXCEPT_KEY", "read.mode": "table"})
    schema = "id INT, price DECIMAL(5,2)"

    skipping = {**opts, f"value.{fmt}.ignore-parse-errors": "true"}
    assert read(spark, skipping, schema) == [(1, Decimal("1.50")), (3, Decimal("-999.99"))]
    with pytest.raises(Exception) as err:
        read(spark, opts, schema)
    message = str(err.value)
    assert f"cannot decode the value of the record at topic '{topic}' partition 0 offset 1 with format '{fmt}'" in (
        message
    )
    assert "does not fit DECIMAL(5,2)" in message


def test_undecodable_key_names_the_key_and_its_bytes(spark, new_topic, options, bootstrap):
    topic = new_topic()
    produce(bootstrap, topic, [(b'{"id":"one"}', b'{"name":"a"}')])

    with pytest.raises(
        Exception, match=rf"cannot decode the key of the record at topic '{topic}' partition 0 offset 0"
    ):
        read(spark, options(topic), SCHEMA)


def test_skipped_records_are_counted_in_the_task_log(caplog):
    raw = {
        "topic": "t",
        "properties.bootstrap.servers": "localhost:9092",
        "key.fields": "id",
        "value.json.ignore-parse-errors": "true",
        "read.mode": "changelog",
    }
    spec = read_spec(raw, SCHEMA + ", _change_type STRING")
    decoder = RecordRangeDecoder(spec, PartitionRange("t", 0, 0, 4))
    records = Records(
        [b'{"id":1}', b'{"id":2}', b'{"id":3}', None],
        [b'{"name":"a"}', b"\xff", b"[not an object]", b'{"name":"d"}'],
        [0, 1, 2, 3],
    )

    with caplog.at_level(logging.WARNING, logger="upsert_kafka"):
        rows = [r for batch in decoder.changelog([records]) for r in batch.to_pylist()]

    assert rows == [{"id": 1, "name": "a", "_change_type": "upsert"}]
    assert re.search(r"skipped 1 record\(s\) with a null key and 2 that failed to decode", caplog.text)
