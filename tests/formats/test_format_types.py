"""Every Spark type through every format that can carry it, end to end: Spark write -> real Kafka (and the
real schema registry) -> Spark read gives back the same rows, nulls and nested values included."""

from __future__ import annotations

import datetime as dt
import struct
from decimal import Decimal

import pytest

from tests.support.kafka_io import consume_all

ALL_TYPES = (
    "id INT, b BOOLEAN, t TINYINT, s SMALLINT, i INT, l BIGINT, f FLOAT, d DOUBLE, dec DECIMAL(20,4), "
    "str STRING, bin BINARY, dt DATE, ts TIMESTAMP, ntz TIMESTAMP_NTZ, arr ARRAY<INT>, m MAP<STRING, DOUBLE>, "
    "st STRUCT<a: STRING, inner: STRUCT<x: BIGINT, ys: ARRAY<STRING>>>"
)
AT = dt.datetime(2024, 5, 6, 7, 8, 9, 123456)
FULL = (
    1, True, -128, 32767, -2147483648, 2**63 - 1, 1.5, -2.25e300, Decimal("1234567890123456.7891"),
    "héllo, \"world\"; ok", b"\x00\xffbin", dt.date(1999, 12, 31), AT, AT.replace(year=1970),
    [1, None, 3], {"a": 1.0, "b": None}, ("x", (42, ["p", None, "q"])),
)  # fmt: skip
NULLS = (2, *[None] * 16)
NESTED_NULLS = (
    3, False, 0, 0, 0, 0, 0.0, 0.0, Decimal("0.0000"), "", b"", dt.date(1970, 1, 1), AT, AT,
    [], {}, (None, None),
)  # fmt: skip


def write(spark, opts: dict, rows: list[tuple], schema: str) -> None:
    # One partition: rows reach Kafka in their order (Spark keeps no order across tasks).
    spark.createDataFrame(rows, schema).coalesce(1).write.format("upsert-kafka").options(**opts).mode("append").save()


def read(spark, opts: dict, schema: str) -> list[tuple]:
    rows = spark.read.format("upsert-kafka").options(**opts).schema(schema).load().collect()
    return sorted((tuple(r) for r in rows), key=lambda r: r[0])


FORMATS = {
    "json": {},
    "avro": {},
    "csv": {"value.csv.null-literal": "\\N"},
}


@pytest.mark.parametrize("value_format", [*FORMATS, "avro-confluent"])
def test_every_spark_type_with_nulls_and_nesting_survives_a_write_and_read(
    spark, new_topic, options, value_format, registry_url
):
    more = dict(FORMATS.get(value_format, {}), **{"value.format": value_format, "key.format": "json"})
    if value_format == "avro-confluent":
        more["value.avro-confluent.url"] = registry_url
    opts = options(new_topic(), more)
    rows = [FULL, NULLS, NESTED_NULLS]

    write(spark, opts, rows, ALL_TYPES)

    assert read(spark, opts, ALL_TYPES) == rows


@pytest.mark.parametrize("key_format", ["json", "avro", "csv", "raw"])
def test_every_format_can_be_the_key_format(spark, new_topic, options, key_format):
    opts = options(new_topic(), {"key.format": key_format, "value.format": "json"})
    schema = "id BIGINT, name STRING"

    write(spark, opts, [(1, "a"), (2**40, "b"), (1, "a2")], schema)

    assert read(spark, opts, schema) == [(1, "a2"), (2**40, "b")]


@pytest.mark.parametrize(
    ("column_type", "value", "big_endian"),
    [
        ("STRING", "zürich", "zürich".encode()),
        ("BINARY", b"\x00\x01", b"\x00\x01"),
        ("BOOLEAN", True, b"\x01"),
        ("TINYINT", -2, struct.pack(">b", -2)),
        ("SMALLINT", 300, struct.pack(">h", 300)),
        ("INT", -70000, struct.pack(">i", -70000)),
        ("BIGINT", 2**40, struct.pack(">q", 2**40)),
        ("FLOAT", 0.5, struct.pack(">f", 0.5)),
        ("DOUBLE", 1e-300, struct.pack(">d", 1e-300)),
    ],
)
def test_raw_value_of_each_type_is_written_in_javas_binary_form_and_read_back(
    spark, new_topic, options, bootstrap, column_type, value, big_endian
):
    topic = new_topic()
    opts = options(topic, {"value.format": "raw", "value.fields-include": "EXCEPT_KEY"})
    schema = f"id INT, v {column_type}"

    write(spark, opts, [(1, value)], schema)

    assert [v for _, _, _, v in consume_all(bootstrap, topic)] == [big_endian]
    assert read(spark, opts, schema) == [(1, value)]


def test_csv_write_of_an_array_element_holding_the_delimiter_fails_naming_column_and_option(spark, new_topic, options):
    """Flink's csv format splits an ARRAY field on the array-element-delimiter and escapes nothing: ['a;b']
    would read back as ['a', 'b']. The write fails instead, before any record of the task is sent."""
    opts = options(new_topic(), {"value.format": "csv"})
    schema = "id INT, tags ARRAY<STRING>"

    with pytest.raises(Exception) as error:
        write(spark, opts, [(1, ["ok"]), (2, ["a;b"])], schema)

    message = str(error.value)
    assert "column 'tags'" in message and "'value.csv.array-element-delimiter'" in message
    assert read(spark, opts, schema) == []


def test_csv_decimals_are_written_as_flink_writes_them_and_read_back_exactly(spark, new_topic, options, bootstrap):
    topic = new_topic()
    opts = options(topic, {"value.format": "csv", "value.fields-include": "EXCEPT_KEY"})
    schema = "id INT, d DECIMAL(10,4)"
    rows = [(1, Decimal("1.5000")), (2, Decimal("100.0000")), (3, Decimal("0.0000")), (4, Decimal("-0.0010"))]

    write(spark, opts, rows, schema)

    # Flink 2.2.1's csv writes every digit of the scale unless write-bigdecimal-in-scientific-notation is set.
    assert [v for _, _, _, v in consume_all(bootstrap, topic)] == [b"1.5000", b"100.0000", b"0.0000", b"-0.0010"]
    assert read(spark, opts, schema) == rows


def test_raw_write_of_a_string_its_charset_cannot_encode_fails_naming_row_column_and_option(spark, new_topic, options):
    opts = options(
        new_topic(), {"value.format": "raw", "value.fields-include": "EXCEPT_KEY", "value.raw.charset": "ISO-8859-1"}
    )
    schema = "id INT, v STRING"

    with pytest.raises(Exception) as error:
        write(spark, opts, [(1, "zürich"), (2, "東京")], schema)

    message = str(error.value)
    assert "row with key {'id': 2}" in message and "column 'v'" in message
    assert "charset 'ISO-8859-1' cannot encode the character '東'" in message and "'value.raw.charset'" in message
