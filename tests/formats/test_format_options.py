"""The csv, raw and avro formats' options (Flink's spellings), at the codec: what each option changes in the
bytes, and the errors for values that cannot work. Plus the raw value / tombstone rule through Spark."""

from __future__ import annotations

import datetime as dt
import io
import json
import struct

import pyarrow as pa
import pytest
from fastavro import parse_schema, schemaless_writer
from pyspark_upsert_kafka.formats import CodecContext, FormatOptionError, make_codec

from tests.support.kafka_io import consume_all

VALUE = CodecContext(role="value", topics=("t",))
ROW = pa.schema([("id", pa.int32()), ("name", pa.string())])


def codec(fmt: str, **options: str):
    return make_codec(fmt, "value.format", options, VALUE)


def encode(fmt: str, rows: list[dict], table: pa.Schema = ROW, **options: str) -> list[bytes]:
    return codec(fmt, **options).encoder(table).encode(pa.RecordBatch.from_pylist(rows, schema=table))


def decode(fmt: str, payloads: list[bytes], table: pa.Schema = ROW, **options: str):
    return codec(fmt, **options).decoder(table).decode(payloads)


# -- csv ---------------------------------------------------------------------------------------


def test_csv_field_delimiter_and_quote_character_shape_the_bytes():
    rows = [{"id": 1, "name": "a;b"}, {"id": 2, "name": "it's"}]
    payloads = encode("csv", rows, **{"field-delimiter": ";", "quote-character": "'"})
    assert payloads == [b"1;'a;b'", b"2;'it''s'"]
    assert decode("csv", payloads, **{"field-delimiter": ";", "quote-character": "'"}).batch.to_pylist() == rows


def test_csv_tab_delimiter_may_be_given_as_backslash_t():
    assert encode("csv", [{"id": 1, "name": "a"}], **{"field-delimiter": "\\t"}) == [b"1\ta"]


def test_csv_without_quotes_escapes_the_delimiter_with_the_escape_character():
    options = {"disable-quote-character": "true", "escape-character": "\\"}
    payloads = encode("csv", [{"id": 1, "name": "a,b\\c"}], **options)
    assert payloads == [b"1,a\\,b\\\\c"]
    assert decode("csv", payloads, **options).batch.to_pylist() == [{"id": 1, "name": "a,b\\c"}]


def test_csv_without_quotes_or_escape_refuses_a_value_holding_the_delimiter():
    with pytest.raises(ValueError, match="quoting is disabled: set escape-character"):
        encode("csv", [{"id": 1, "name": "a,b"}], **{"disable-quote-character": "true"})


def test_csv_null_literal_tells_null_from_the_empty_string():
    rows = [{"id": 1, "name": None}, {"id": 2, "name": ""}]
    payloads = encode("csv", rows, **{"null-literal": "\\N"})
    assert payloads == [b"1,\\N", b"2,"], "with a null literal an empty string is an empty field, as Flink writes it"
    assert decode("csv", payloads, **{"null-literal": "\\N"}).batch.to_pylist() == rows


def test_csv_array_element_delimiter_joins_array_elements():
    schema = pa.schema([("id", pa.int32()), ("xs", pa.list_(pa.int32()))])
    rows = [{"id": 1, "xs": [1, 2, 3]}]
    payloads = encode("csv", rows, schema, **{"array-element-delimiter": "|"})
    assert payloads == [b"1,1|2|3"]
    assert decode("csv", payloads, schema, **{"array-element-delimiter": "|"}).batch.to_pylist() == rows


def test_csv_comment_lines_are_skipped_only_with_allow_comments():
    payloads = [b"# written by a tool\n1,a"]
    assert decode("csv", payloads, **{"allow-comments": "true"}).batch.to_pylist() == [{"id": 1, "name": "a"}]
    assert decode("csv", payloads).failures, "without allow-comments the comment line is a bad record"


# Which texts Flink 2.2.1's csv format quotes (Jackson 2.18's CsvEncoder): a text longer than 24 UTF-16 units, or
# holding a character below one past the larger of the field delimiter and the quote character, or a backslash (the
# escape character when one is set); never a number. The expected bytes are those Flink's CsvRowDataSerializationSchema
# wrote for these rows.
QUOTED_TEXTS = ["hello", "a b", "abc123", "-", "a|b", "back\\slash", "x" * 24, "x" * 25]
QUOTED_TEXTS += ["\U0001d11e" * 12, "\U0001d11e" * 13, "é" * 24, "é" * 25]  # 24 and 26, 24 and 25 UTF-16 units
TEXT_ROW = pa.schema([("s", pa.string()), ("i", pa.int32()), ("d", pa.date32())])


@pytest.mark.parametrize(
    ("delimiter", "quoted"),
    [
        (",", {"a b", "back\\slash", "x" * 25, "\U0001d11e" * 13, "é" * 25}),
        ("\\t", {"a b", "back\\slash", "x" * 25, "\U0001d11e" * 13, "é" * 25}),  # the option's spelling of a tab
        (";", {"a b", "abc123", "-", "back\\slash", "x" * 25, "\U0001d11e" * 13, "é" * 25, "2024-05-06"}),
        ("|", set(QUOTED_TEXTS[:8]) | {"\U0001d11e" * 13, "é" * 25, "2024-05-06"}),
    ],
)
def test_csv_quotes_the_texts_flinks_csv_format_quotes_whatever_the_delimiter(delimiter, quoted):
    rows = [{"s": v, "i": -5, "d": dt.date(2024, 5, 6)} for v in QUOTED_TEXTS]
    sep = "\t" if delimiter == "\\t" else delimiter

    def field(text: str) -> str:
        return f'"{text}"' if text in quoted else text

    expected = [sep.join([field(v), "-5", field("2024-05-06")]).encode() for v in QUOTED_TEXTS]
    options = {"field-delimiter": delimiter}
    assert encode("csv", rows, TEXT_ROW, **options) == expected
    assert decode("csv", expected, TEXT_ROW, **options).batch.to_pylist() == rows


def test_csv_quoted_text_doubles_the_quote_and_escapes_only_the_escape_character_as_flink():
    schema = pa.schema([("s", pa.string()), ("a", pa.list_(pa.string()))])
    rows = [{"s": 'a"b\\c', "a": ["x\\y", 'q"r']}]
    escaped = encode("csv", rows, schema, **{"escape-character": "\\"})
    assert escaped == [b'"a""b\\\\c","x\\\\y;q""r"']
    assert decode("csv", escaped, schema, **{"escape-character": "\\"}).batch.to_pylist() == rows
    single = encode("csv", rows, schema, **{"quote-character": "'"})
    assert single == [b"'a\"b\\c','x\\y;q\"r'"]
    assert decode("csv", single, schema, **{"quote-character": "'"}).batch.to_pylist() == rows
    # Before, an escape character escaped the quote too: such records still read.
    assert (
        decode("csv", [b'"a\\"b\\\\c","x\\\\y;q\\"r"'], schema, **{"escape-character": "\\"}).batch.to_pylist() == rows
    )


def test_csv_timestamps_are_written_with_the_fraction_flink_writes_and_read_back():
    utc = dt.timezone.utc
    wall = [dt.datetime(2024, 5, 6, 7, 8, 9, 120000), dt.datetime(1, 1, 1), dt.datetime(2024, 1, 1, 0, 0, 0, 1), None]
    schema = pa.schema([("t", pa.timestamp("us")), ("l", pa.timestamp("us", tz="UTC"))])
    rows = [{"t": w, "l": w and w.replace(tzinfo=utc)} for w in wall]
    payloads = encode("csv", rows, schema)
    assert payloads == [
        b'"2024-05-06 07:08:09.12","2024-05-06 07:08:09.12Z"',
        b'"0001-01-01 00:00:00","0001-01-01 00:00:00Z"',
        b'"2024-01-01 00:00:00.000001","2024-01-01 00:00:00.000001Z"',
        b",",
    ]
    assert decode("csv", payloads, schema).batch.to_pylist() == rows
    # What this connector wrote before (6 digits, unquoted) still reads.
    old = [b"2024-05-06 07:08:09.120000,2024-05-06 07:08:09.120000Z"]
    assert decode("csv", old, schema).batch.to_pylist() == rows[:1]


def test_csv_empty_string_is_an_empty_field_with_a_null_literal_and_quoted_without_one():
    rows = [{"id": 1, "name": ""}, {"id": 2, "name": None}]
    assert encode("csv", rows) == [b'1,""', b"2,"], "Flink writes both as an empty field: quoted, it reads back"
    assert decode("csv", [b'1,""', b"2,"]).batch.to_pylist() == rows
    assert encode("csv", rows, **{"null-literal": "NULL"}) == [b"1,", b"2,NULL"]


def test_csv_floats_are_written_as_flinks_csv_format_writes_them_and_read_back():
    schema = pa.schema([("f", pa.float64()), ("g", pa.float32())])
    nan, inf = float("nan"), float("inf")
    rows = [{"f": 1.0, "g": 1.1}, {"f": 1e7, "g": -0.0}, {"f": nan, "g": -inf}, {"f": 1e-5, "g": None}]
    payloads = encode("csv", rows, schema)
    assert payloads == [b"1.0,1.1", b"1.0E7,-0.0", b"NaN,-Infinity", b"1.0E-5,"]
    back = decode("csv", payloads, schema).batch.to_pylist()
    assert repr(back) == repr(pa.RecordBatch.from_pylist(rows, schema=schema).to_pylist())


def test_csv_record_with_a_line_break_outside_quotes_is_one_bad_record():
    decoded = decode("csv", [b"1,a", b"2,b\n3,c", b"4,d"])
    assert decoded.batch.to_pylist() == [{"id": 1, "name": "a"}, {"id": 4, "name": "d"}]
    assert decoded.failures == ((1, "expected one CSV row, got 2"),)


def test_csv_bad_record_is_reported_by_index_and_the_others_decoded():
    decoded = decode("csv", [b"1,a", b"x,b", b"3,c"])
    assert decoded.batch.to_pylist() == [{"id": 1, "name": "a"}, {"id": 3, "name": "c"}]
    assert [i for i, _ in decoded.failures] == [1]


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"quote-character": "'", "disable-quote-character": "true"}, "cannot be set together"),
        ({"field-delimiter": "ab"}, r"'value\.csv\.field-delimiter' must be a single character"),
        ({"field-delimiter": '"'}, "must differ"),
        ({"array-element-delimiter": ""}, r"'value\.csv\.array-element-delimiter' must not be empty"),
        ({"allow-comments": "maybe"}, r"'value\.csv\.allow-comments' must be true or false"),
    ],
)
def test_csv_options_that_cannot_work_are_rejected_naming_them(options, error):
    with pytest.raises(FormatOptionError, match=error):
        codec("csv", **options)


# -- raw ---------------------------------------------------------------------------------------

INT = pa.schema([("v", pa.int32())])


def test_raw_numbers_are_big_endian_by_default_and_little_endian_on_request():
    rows = [{"v": 258}]
    assert encode("raw", rows, INT) == [struct.pack(">i", 258)]
    assert encode("raw", rows, INT, endianness="little-endian") == [struct.pack("<i", 258)]
    assert decode("raw", [struct.pack("<i", -5)], INT, endianness="little-endian").batch.to_pylist() == [{"v": -5}]


def test_raw_strings_use_the_charset():
    text = pa.schema([("v", pa.string())])
    assert encode("raw", [{"v": "é"}], text, charset="ISO-8859-1") == [b"\xe9"]
    assert decode("raw", [b"\xe9"], text, charset="latin-1").batch.to_pylist() == [{"v": "é"}]
    bad = decode("raw", [b"ok", b"\xe9"], text)
    assert bad.batch.to_pylist() == [{"v": "ok"}] and "not valid UTF-8" in bad.failures[0][1]


def test_raw_null_value_is_refused_on_write_because_null_is_a_tombstone():
    with pytest.raises(ValueError, match=r"a record with a null value is a tombstone\. Write the row as a delete"):
        encode("raw", [{"v": None}], INT)


@pytest.mark.parametrize(
    ("schema", "options", "error"),
    [
        (pa.schema([("a", pa.int32()), ("b", pa.int32())]), {}, "holds exactly one column, got 2 .a, b."),
        (pa.schema([("a", pa.date32())]), {}, "cannot hold column 'a' of type date32"),
        (INT, {"charset": "klingon"}, r"'value\.raw\.charset': unknown charset 'klingon'"),
        (INT, {"charset": "base64"}, r"'value\.raw\.charset': 'base64' is not a text charset"),  # no text
        (INT, {"endianness": "middle"}, r"'value\.raw\.endianness' must be one of big-endian, little-endian"),
    ],
)
def test_raw_schemas_and_options_that_cannot_work_are_rejected(schema, options, error):
    with pytest.raises(FormatOptionError, match=error):
        codec("raw", **options).encoder(schema)


def test_raw_value_delete_is_a_tombstone_and_reads_back_as_a_delete_row(spark, new_topic, options, bootstrap):
    topic = new_topic()
    opts = options(topic, {"value.format": "raw", "value.fields-include": "EXCEPT_KEY"})
    schema = "id INT, v STRING, _change_type STRING"
    rows = [(1, "a", "upsert"), (2, "b", "upsert"), (2, None, "delete")]
    spark.createDataFrame(rows, schema).coalesce(1).write.format("upsert-kafka").options(**opts).mode("append").save()

    assert [v for *_, v in consume_all(bootstrap, topic)] == [b"a", b"b", None]
    read = spark.read.format("upsert-kafka").options(**opts, **{"read.mode": "changelog"}).schema(schema).load()
    assert [tuple(r) for r in read.collect()] == [(1, "a", "upsert"), (2, "b", "upsert"), (2, None, "delete")]


# -- avro --------------------------------------------------------------------------------------


def test_avro_record_name_and_namespace_name_the_derived_schema():
    derived = codec("avro", **{"record-name": "Order", "record-namespace": "shop"}).writer_schema(ROW)
    assert (derived["name"], derived["namespace"]) == ("Order", "shop")
    assert derived["fields"] == [
        {"name": "id", "type": ["null", "int"], "default": None},
        {"name": "name", "type": ["null", "string"], "default": None},
    ]


def test_avro_given_writer_schema_is_resolved_to_the_tables_columns():
    writer = {
        "type": "record",
        "name": "Event",
        "fields": [
            {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["CLICK", "VIEW"]}},
            {"name": "dropped", "type": "string"},
            {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
            {"name": "n", "type": "int"},
        ],
    }
    at = dt.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=dt.timezone.utc)
    buffer = io.BytesIO()
    schemaless_writer(buffer, parse_schema(writer), {"kind": "VIEW", "dropped": "x", "at": at, "n": 7})
    # The table: the enum as STRING, no 'dropped', the int widened to BIGINT, one column the writer lacks.
    table = pa.schema(
        [("n", pa.int64()), ("kind", pa.string()), ("at", pa.timestamp("us", tz="UTC")), ("extra", pa.string())]
    )

    decoded = decode("avro", [buffer.getvalue()], table, schema=json.dumps(writer))

    assert decoded.failures == ()
    assert decoded.batch.to_pylist() == [{"n": 7, "kind": "VIEW", "at": at, "extra": None}]


def test_avro_given_schema_is_used_to_write():
    writer = {
        "type": "record",
        "name": "R",
        "fields": [{"name": "id", "type": "int"}, {"name": "name", "type": "string"}],
    }
    payloads = encode("avro", [{"id": 1, "name": "a"}], schema=json.dumps(writer))
    assert payloads == [b"\x02\x02a"]  # no union branch index: the given schema's fields are not nullable


def test_avro_trailing_bytes_after_a_record_are_a_bad_record():
    good = encode("avro", [{"id": 1, "name": "a"}])[0]
    decoded = decode("avro", [good + b"\x00", good])
    assert decoded.batch.num_rows == 1 and decoded.failures == ((0, "1 byte(s) left after the Avro record"),)


@pytest.mark.parametrize(
    ("options", "schema", "error"),
    [
        ({"schema": "{not json"}, ROW, r"'value\.avro\.schema' is not a valid Avro schema"),
        ({}, pa.schema([("m", pa.map_(pa.int32(), pa.int32()))]), "Avro maps have string keys only"),
    ],
)
def test_avro_schemas_that_cannot_work_are_rejected(options, schema, error):
    with pytest.raises(FormatOptionError, match=error):
        codec("avro", **options).encoder(schema)
