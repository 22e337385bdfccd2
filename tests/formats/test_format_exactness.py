"""Every value a format writes reads back exactly, or the write fails naming the column and what to change;
every value a format reads is exact, or the record fails naming the field. At the codec, no Kafka: csv
arrays and structs, csv decimals as Flink writes them, raw charsets, years beyond 9999, JSON nanoseconds."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark_upsert_kafka.formats import CodecContext, make_codec

VALUE = CodecContext(role="value", topics=("t",))


def codec(fmt: str, **options: str):
    return make_codec(fmt, "value.format", options, VALUE)


def one_column(t: pa.DataType, values: list, name: str = "c") -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([pa.array(values, t)], schema=pa.schema([pa.field(name, t)]))


def encode(fmt: str, batch: pa.RecordBatch, **options: str) -> list[bytes]:
    return codec(fmt, **options).encoder(batch.schema).encode(batch)


def decode(fmt: str, payloads: list[bytes], schema: pa.Schema, **options: str):
    return codec(fmt, **options).decoder(schema).decode(payloads)


def round_trip(fmt: str, batch: pa.RecordBatch, **options: str) -> list:
    decoded = decode(fmt, encode(fmt, batch, **options), batch.schema, **options)
    assert decoded.failures == ()
    return decoded.batch.column(0).to_pylist()


STRINGS = pa.list_(pa.string())
PAIR = pa.struct([("a", pa.string()), ("b", pa.string())])
NO_QUOTES = {"disable-quote-character": "true", "escape-character": "\\"}

# -- csv: ARRAY and STRUCT elements --------------------------------------------------------------------
# Flink's csv format (Jackson) joins elements with the array-element-delimiter and splits on it when reading,
# escaping nothing: an element that holds the delimiter, or that reads back as something else, cannot be
# written.


@pytest.mark.parametrize(
    ("t", "value", "options"),
    [
        (STRINGS, ["a;b"], {}),
        (STRINGS, ["x", "a;b", "y"], {"null-literal": "\\N"}),
        (PAIR, {"a": "a;b", "b": "c"}, {}),
        (STRINGS, ["a|", "b"], {"array-element-delimiter": "||"}),  # 'a|' + '||' + 'b' splits as 'a', '|b'
    ],
)
def test_csv_element_holding_the_array_element_delimiter_fails_the_write_naming_column_and_option(t, value, options):
    with pytest.raises(ValueError) as error:
        encode(
            "csv", one_column(t, [["ok"] if t == STRINGS else {"a": "ok", "b": "ok"}, value], name="tags"), **options
        )
    assert "column 'tags'" in str(error.value)
    assert "'value.csv.array-element-delimiter'" in str(error.value)


@pytest.mark.parametrize(
    ("value", "options", "option"),
    [
        ([""], {"null-literal": "\\N"}, None),  # one empty element: an empty field, which reads as []
        ([None], {}, "null-literal"),  # one null element without a null literal: the same
        (["a", ""], {}, "null-literal"),  # an empty element without a null literal reads as null
        (["a", "\\N"], {"null-literal": "\\N"}, "null-literal"),  # an element equal to the null literal too
    ],
)
def test_csv_array_element_that_would_read_back_as_another_value_fails_the_write(value, options, option):
    with pytest.raises(ValueError) as error:
        encode("csv", one_column(STRINGS, [value], name="tags"), **options)
    assert "column 'tags'" in str(error.value)
    if option:
        assert f"'value.csv.{option}'" in str(error.value)


def test_csv_struct_field_that_would_read_back_as_null_fails_the_write():
    with pytest.raises(ValueError, match=r"column 'c'.*'value\.csv\.null-literal'"):
        encode("csv", one_column(PAIR, [{"a": "", "b": "x"}]))
    assert round_trip("csv", one_column(PAIR, [{"a": "", "b": "x"}]), **{"null-literal": "\\N"}) == [
        {"a": "", "b": "x"}
    ]


@pytest.mark.parametrize(("t", "value"), [(pa.string(), ""), (STRINGS, []), (STRINGS, [None]), (pa.string(), "NULL")])
def test_csv_without_quotes_a_value_written_as_the_null_text_fails_the_write(t, value):
    options = dict(NO_QUOTES, **({"null-literal": "NULL"} if value in ("NULL", [None]) else {}))
    option = "disable-quote-character" if value == [None] else "null-literal"
    with pytest.raises(ValueError, match=f"column 'c'.*'value.csv.{option}'"):
        encode("csv", one_column(t, [value]), **options)


def test_csv_null_literal_holding_the_escape_character_is_rejected():
    """The reader takes the escape character away before it compares a field with the null literal."""
    with pytest.raises(ValueError, match=r"'value\.csv\.null-literal'.*'value\.csv\.escape-character'"):
        codec("csv", **{"null-literal": "\\N", **NO_QUOTES})


def test_csv_arrays_and_structs_that_can_be_told_apart_round_trip_exactly():
    arrays = [["a", None, "b c"], [None, None], [], None, ["", "x"], [None]]
    assert round_trip("csv", one_column(STRINGS, arrays), **{"null-literal": "\\N"}) == arrays
    assert round_trip("csv", one_column(STRINGS, arrays[:-1]), **{"null-literal": "NULL", **NO_QUOTES}) == arrays[:-1]
    assert round_trip("csv", one_column(STRINGS, [["a,b", 'q"'], ["x"]])) == [["a,b", 'q"'], ["x"]]


SPECIAL_TEXT = st.text(alphabet=st.sampled_from(["a", ";", "|", ",", '"', "\\", "N", " "]), max_size=4)
CSV_TYPES = st.sampled_from([STRINGS, PAIR, pa.list_(pa.int32()), pa.string()])
CSV_OPTIONS = st.sampled_from(
    [{}, {"null-literal": "\\N"}, {"array-element-delimiter": "||"}, dict(NO_QUOTES, **{"null-literal": "N"})]
)


@st.composite
def csv_columns(draw) -> pa.RecordBatch:
    t = draw(CSV_TYPES)
    if t == STRINGS:
        value = st.lists(st.none() | SPECIAL_TEXT, max_size=3)
    elif t == PAIR:
        value = st.fixed_dictionaries({"a": st.none() | SPECIAL_TEXT, "b": st.none() | SPECIAL_TEXT})
    elif t == pa.string():
        value = SPECIAL_TEXT
    else:
        value = st.lists(st.none() | st.integers(-5, 5), max_size=3)
    return one_column(t, draw(st.lists(st.none() | value, min_size=1, max_size=4)))


def csv_ambiguous(value: object, t: pa.DataType, options: dict[str, str]) -> bool:
    """Whether Flink's csv format would write `value` as text that reads back as another value (the refusals
    above, worked out from the text alone): an ARRAY of one element written as nothing, an element written as the
    null text, elements that do not split back on the delimiter, or, without quotes, a field written as the null
    text."""
    if value is None or (t == pa.list_(pa.int32()) and value != [None]):
        return False  # numbers hold no delimiter, nor the null text unless a lone null element
    null_text = options.get("null-literal", "")
    delimiter = options.get("array-element-delimiter", ";")
    elements = list(value.values()) if isinstance(value, dict) else value if isinstance(value, list) else None
    if elements is None:  # a string
        text = value
    else:
        texts = [null_text if e is None else str(e) for e in elements]
        text = delimiter.join(texts)
        if (len(texts) == 1 and text == "") or any(e is not None and str(e) == null_text for e in elements):
            return True
        if text and text.split(delimiter) != texts:
            return True
    return "disable-quote-character" in options and text == null_text


@settings(max_examples=300)
@given(csv_columns(), CSV_OPTIONS)
def test_csv_write_either_reads_back_exactly_or_fails(batch, options):
    try:
        payloads = encode("csv", batch, **options)
    except ValueError as e:
        assert "column 'c'" in str(e)
        declined = [v for v in batch.column(0).to_pylist() if csv_ambiguous(v, batch.schema[0].type, options)]
        assert declined, f"refused values that read back as written: {e}"
        return
    decoded = decode("csv", payloads, batch.schema, **options)
    assert decoded.failures == ()
    assert decoded.batch.to_pylist() == batch.to_pylist()


# -- csv: DECIMAL as Flink writes it -------------------------------------------------------------------
# Flink 2.2.1's csv format writes a DECIMAL with BigDecimal.toPlainString, all the scale's digits kept, unless
# write-bigdecimal-in-scientific-notation is set to true: then trailing zeros stripped (zero is `0`) and
# BigDecimal.toString. An ARRAY's elements are written the same way (Jackson 2.18). The expected bytes are those
# Flink 2.2.1's CsvRowDataSerializationSchema wrote for these values.

DEC = pa.decimal128(20, 10)
DECIMALS = [
    "1.5000000000",
    "100.0000000000",
    "0E-10",
    "-123.4500000000",
    "0.0000001200",
    "12.0000000000",
    "1200",
    "1E-10",
]
SCIENTIFIC = {"write-bigdecimal-in-scientific-notation": "true"}


def test_csv_decimals_are_written_as_flinks_csv_format_writes_them_and_read_back_exactly():
    batch = one_column(DEC, [Decimal(d) for d in DECIMALS])
    plain = [
        b"1.5000000000",
        b"100.0000000000",
        b"0.0000000000",
        b"-123.4500000000",
        b"0.0000001200",
        b"12.0000000000",
        b"1200.0000000000",
        b"0.0000000001",
    ]
    assert encode("csv", batch) == plain, "Flink writes plain unless the option is set"
    assert encode("csv", batch, **{"write-bigdecimal-in-scientific-notation": "false"}) == plain
    assert encode("csv", batch, **SCIENTIFIC) == [
        b"1.5",
        b"1E+2",
        b"0",
        b"-123.45",
        b"1.2E-7",
        b"12",
        b"1.2E+3",
        b"1E-10",
    ]
    for options in ({}, SCIENTIFIC):
        assert round_trip("csv", batch, **options) == [Decimal(d) for d in DECIMALS]


def test_csv_decimals_of_any_scale_keep_every_fraction_digit_as_flink_writes_them():
    # Arrow's own text of these has an exponent (1E-18, 0E-18, -1.00000000000E-7): Flink's is plain.
    values = ["0E-18", "1E-18", "-1E-18", "-1.00000000000E-7", "12.5", "-99999999999999999999.999999999999999999"]
    batch = one_column(pa.decimal128(38, 18), [Decimal(v) for v in values])
    assert encode("csv", batch) == [
        b"0.000000000000000000",
        b"0.000000000000000001",
        b"-0.000000000000000001",
        b"-0.000000100000000000",
        b"12.500000000000000000",
        b"-99999999999999999999.999999999999999999",
    ]
    assert round_trip("csv", batch) == [Decimal(v) for v in values]


def test_csv_decimal_array_elements_are_written_as_the_columns_values():
    batch = one_column(pa.list_(DEC), [[Decimal("100.0000000000"), Decimal("1.5000000000"), None]])
    for options, text in (
        ({}, b'"100.0000000000;1.5000000000;\\N"'),  # quoted: Jackson quotes text holding a backslash
        (SCIENTIFIC, b'"1E+2;1.5;\\N"'),
    ):
        assert encode("csv", batch, **{"null-literal": "\\N", **options}) == [text]
        assert round_trip("csv", batch, **{"null-literal": "\\N", **options}) == batch.column(0).to_pylist()


def test_csv_decimal_with_more_fraction_digits_than_its_column_is_rounded_half_up_as_flink_reads_it():
    payloads = [b"1.23456", b"1.23455", b"-1.23455", b"1.5", b"999999.99995", b"1E-5"]
    decoded = decode("csv", payloads, pa.schema([("c", pa.decimal128(10, 4))]))
    assert [i for i, _ in decoded.failures] == [4], "999999.99995 rounds to 1000000.0000: too many digits"
    assert "does not fit DECIMAL(10,4)" in decoded.failures[0][1]
    expected = ["1.2346", "1.2346", "-1.2346", "1.5000", "0.0000"]
    assert decoded.batch.column(0).to_pylist() == [Decimal(v) for v in expected]


def test_avro_decimals_of_a_larger_writer_scale_are_rounded_half_up_to_the_columns():
    """An Avro writer's schema may give a decimal more scale than the table's column (avro-confluent reads
    with the registry's writer schema): its values are rounded as Flink rounds them."""
    from pyspark_upsert_kafka.formats.avro.codec import records_to_batch

    schema = pa.schema([("d", pa.decimal128(6, 3)), ("ds", pa.list_(pa.decimal128(6, 3)))])
    records = [{"d": Decimal("3.14050"), "ds": [Decimal("-0.00050")]}, {"d": Decimal("999.99950"), "ds": None}]
    decoded = records_to_batch(records, {}, schema)
    assert decoded.batch.to_pylist() == [{"d": Decimal("3.141"), "ds": [Decimal("-0.001")]}]
    assert [i for i, _ in decoded.failures] == [1] and "does not fit DECIMAL(6,3)" in decoded.failures[0][1]


def test_avro_with_a_given_schema_in_millis_writes_exact_millis_and_refuses_finer_digits_at_any_depth():
    """A given schema's timestamp-millis / time-millis (fastavro would cut a finer value's digits off unsaid)."""
    import json

    from fastavro import parse_schema, schemaless_reader

    given = {
        "type": "record",
        "name": "r",
        "fields": [
            {"name": "ts", "type": ["null", {"type": "long", "logicalType": "timestamp-millis"}]},
            {"name": "t", "type": {"type": "int", "logicalType": "time-millis"}},
            {"name": "us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
            {"name": "nested", "type": {"type": "array", "items": {"type": "record", "name": "n", "fields": [
                {"name": "at", "type": {"type": "long", "logicalType": "local-timestamp-millis"}}]}}},
        ],
    }  # fmt: skip
    schema = pa.schema([("ts", pa.timestamp("us", "UTC")), ("t", pa.time64("ns")), ("us", pa.timestamp("us", "UTC")),
                        ("nested", pa.list_(pa.struct([("at", pa.timestamp("us"))])))])  # fmt: skip
    exact_ms = dt.datetime(2024, 6, 30, 12, 0, 0, 1000, tzinfo=dt.timezone.utc)
    fine = exact_ms.replace(microsecond=1001)
    encoder = codec("avro", schema=json.dumps(given)).encoder(schema)

    def row(ts, t, at):
        return pa.RecordBatch.from_pylist([{"ts": ts, "t": t, "us": fine, "nested": [{"at": at}]}], schema=schema)

    (written,) = encoder.encode(row(exact_ms, dt.time(1, 2, 3, 4000), dt.datetime(1969, 12, 31, 23, 59, 59, 999000)))
    back = schemaless_reader(__import__("io").BytesIO(written), parse_schema(given), None)
    assert back["ts"] == exact_ms and back["t"] == dt.time(1, 2, 3, 4000) and back["us"] == fine
    assert back["nested"] == [{"at": dt.datetime(1969, 12, 31, 23, 59, 59, 999000)}]
    for values, column in [
        ((fine, dt.time(1), dt.datetime(2000, 1, 1)), "ts"),
        ((exact_ms, dt.time(1, 2, 3, 4001), dt.datetime(2000, 1, 1)), "t"),
        ((exact_ms, dt.time(1), dt.datetime(2000, 1, 1, 0, 0, 0, 1)), "nested"),
    ]:
        with pytest.raises(ValueError, match=rf"schema given writes column '{column}' in milliseconds.*finer digits"):
            encoder.encode(row(*values))


def test_avro_keys_are_written_and_read_as_flink_writes_a_primary_key():
    """Flink's avro format writes a key's columns NOT NULL (a primary key's): `"long"`, no union branch byte.
    A value's nullable columns stay unions."""
    import io

    from fastavro import schemaless_writer

    schema = pa.schema([("id", pa.int64()), ("region", pa.string())])
    flink_key = {
        "type": "record",
        "name": "record",
        "fields": [{"name": "id", "type": "long"}, {"name": "region", "type": "string"}],
    }
    expected = io.BytesIO()
    schemaless_writer(expected, flink_key, {"id": 7, "region": "eu"})
    key_codec = make_codec("avro", "key.format", {}, CodecContext("key"))
    batch = pa.RecordBatch.from_pylist([{"id": 7, "region": "eu"}], schema=schema)
    assert key_codec.encoder(schema).encode(batch) == [expected.getvalue()]
    assert key_codec.decoder(schema).decode([expected.getvalue()]).batch.to_pylist() == [{"id": 7, "region": "eu"}]
    value = make_codec("avro", "value.format", {}, CodecContext("value")).encoder(schema).encode(batch)[0]
    assert value == b"\x02\x0e\x02\x04eu", "a value's nullable columns are unions (branch 1, then the value)"


# -- raw: a charset that cannot encode the text -----------------------------------------------------------


def test_raw_string_the_charset_cannot_encode_fails_naming_column_charset_and_option():
    batch = one_column(pa.string(), ["plain", "日本"], name="name")
    with pytest.raises(ValueError) as error:
        encode("raw", batch, charset="ISO-8859-1")
    assert not isinstance(error.value, UnicodeError)  # the codec's own message, not Python's
    message = str(error.value)
    assert "column 'name'" in message and "ISO-8859-1" in message and "'value.raw.charset'" in message
    assert "'日'" in message


# -- dates and timestamps beyond the years 0001 to 9999 ----------------------------------------------------
# Spark holds dates up to the year 5881580 and timestamps up to 294247; Python's datetime, which the json and csv
# formats read with, holds 0001 to 9999. Such a value fails the write naming the column and the value as Spark
# prints it, and a record holding one fails to decode.

YEAR_10000 = 2932897  # days from 1970-01-01 to 10000-01-01
MICROS_PER_DAY = 86_400_000_000


@pytest.mark.parametrize("fmt", ["json", "csv"])
@pytest.mark.parametrize(
    ("t", "value", "shown"),
    [
        (pa.date32(), YEAR_10000, "+10000-01-01"),
        (pa.date32(), -719163, "0000-12-31"),  # the day before 0001-01-01
        (pa.timestamp("us", tz="UTC"), YEAR_10000 * MICROS_PER_DAY + 1, "+10000-01-01 00:00:00.000001"),
        (pa.timestamp("us"), 2**63 - 1, "+294247-01-10 04:00:54.775807"),
        (pa.list_(pa.date32()), [0, YEAR_10000], "+10000-01-01"),
        (pa.map_(pa.string(), pa.date32()), [("k", YEAR_10000)], "+10000-01-01"),
        (pa.struct([("at", pa.timestamp("us"))]), {"at": -(2**63)}, "-290308-12-21 19:59:05.224192"),
    ],
)
def test_date_or_timestamp_outside_years_1_to_9999_fails_the_write_naming_column_and_value(fmt, t, value, shown):
    batch = one_column(t, [None, value], name="at")
    with pytest.raises(ValueError) as error:
        encode(fmt, batch, **({"null-literal": "\\N"} if fmt == "csv" else {}))
    assert "column 'at'" in str(error.value) and shown in str(error.value)
    assert "0001" in str(error.value) and "9999" in str(error.value)


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_each_row_of_a_batch_encodes_alone_as_in_the_batch(fmt):
    """The write task encodes row by row to name a bad row: a slice encodes to its rows' bytes, and does not
    fail for its neighbours."""
    batch = one_column(pa.list_(pa.string()), [["x", "y"], None, ["a"], []])
    whole = encode(fmt, batch)
    assert [encode(fmt, batch.slice(i, 1))[0] for i in range(batch.num_rows)] == whole
    dates = one_column(pa.list_(pa.date32()), [[0], [YEAR_10000]])
    assert len(encode(fmt, dates.slice(0, 1))) == 1


@pytest.mark.parametrize(
    ("fmt", "payload"),
    [("json", b'{"c":"+10000-01-01 00:00:00"}'), ("csv", b"+10000-01-01 00:00:00")],
)
def test_a_record_with_a_year_beyond_9999_is_the_records_error(fmt, payload):
    decoded = decode(fmt, [payload], pa.schema([("c", pa.timestamp("us"))]))
    assert decoded.batch.num_rows == 0 and len(decoded.failures) == 1


# -- json: timestamps with more than microseconds ----------------------------------------------------------
# Spark's own from_json and CAST keep the first 6 fraction digits and drop the rest without a word; a Spark
# TIMESTAMP cannot hold the nanoseconds, so the record fails naming the field instead.

NANOS = '"2024-01-01 10:00:00.123456789"'
TS_SCHEMAS = {
    "flat": (pa.schema([("at", pa.timestamp("us"))]), '{{"at":{}}}'),
    "zoned": (pa.schema([("at", pa.timestamp("us", tz="UTC"))]), '{{"at":{}}}'),
    "nested": (pa.schema([("at", pa.list_(pa.timestamp("us")))]), '{{"at":[{}]}}'),
}


@pytest.mark.parametrize("shape", list(TS_SCHEMAS))
@pytest.mark.parametrize("per_record", [False, True], ids=["bulk", "per-record"])
def test_json_timestamp_with_nanoseconds_fails_the_record_naming_the_field(shape, per_record):
    schema, template = TS_SCHEMAS[shape]
    good = template.format('"2024-01-01 10:00:00.123456"').encode()
    bad = template.format(NANOS).encode()
    options = {"fail-on-missing-field": "true"} if per_record else {}  # that option takes the per-record path
    decoded = decode("json", [good, bad, good], schema, **options)
    assert [i for i, _ in decoded.failures] == [1]
    reason = decoded.failures[0][1]
    assert "field 'at'" in reason and "123456789" in reason and "microseconds" in reason
    assert decoded.batch.num_rows == 2


def test_json_timestamp_with_zeros_past_microseconds_reads_exactly():
    schema = pa.schema([("at", pa.timestamp("us"))])
    decoded = decode("json", [b'{"at":"2024-01-01T10:00:00.123456000"}'], schema)
    assert decoded.failures == ()
    assert decoded.batch.column(0).to_pylist() == [dt.datetime(2024, 1, 1, 10, 0, 0, 123456)]
