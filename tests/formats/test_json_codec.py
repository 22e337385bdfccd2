"""The json codec alone (pure logic, no Kafka): round trips, the bulk path against the per-record path,
and how bad records are reported."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
import textwrap
import tracemalloc
from decimal import Decimal

import orjson
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from pyspark_upsert_kafka.formats import CodecContext, FormatOptionError, make_codec
from pyspark_upsert_kafka.formats.json.values import _map_to_json

from tests.support.arrow_strategies import batches

VALUE = CodecContext(role="value", topics=("t",))


def codec(**options: str):
    return make_codec("json", "value.format", options, VALUE)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches())
def test_encode_then_decode_gives_the_same_rows_for_any_nested_schema(batch):
    json = codec()
    payloads = json.encoder(batch.schema).encode(batch)
    decoded = json.decoder(batch.schema).decode(payloads)
    assert decoded.failures == ()
    assert decoded.batch.to_pylist() == batch.to_pylist()


# -- the bulk path and the per-record path agree --------------------------------------------

SIMPLE = pa.schema(
    [
        ("id", pa.int32()),
        ("name", pa.string()),
        ("price", pa.decimal128(10, 2)),
        ("at", pa.timestamp("us", tz="UTC")),
        ("tags", pa.list_(pa.int64())),
    ]
)


def test_bulk_path_and_per_record_path_decode_identically():
    payloads = [
        b'{"id":1,"name":"a","price":1.25,"at":"2024-01-02 03:04:05.5","tags":[1,2]}',
        b'{"id":2,"extra":"ignored"}',
        b'{"id":3,"name":null,"price":"7","at":"2024-01-02T03:04:05Z","tags":[]}',
    ]
    decoder = codec().decoder(SIMPLE)
    bulk = decoder._decode_bulk(payloads)
    assert bulk is not None, "this input should take the Arrow fast path"
    assert bulk.to_pylist() == decoder._decode_each(payloads).batch.to_pylist()


def test_payload_spanning_lines_or_empty_keeps_rows_aligned():
    decoder = codec().decoder(SIMPLE)
    decoded = decoder.decode([b'{"id":1,\n"name":"multi\\nline"}', b"", b'{"id":2}{"id":3}', b'{"id":4}'])
    assert [r["id"] for r in decoded.batch.to_pylist()] == [1, 4]
    assert [i for i, _ in decoded.failures] == [1, 2]
    assert decoded.batch.to_pylist()[0]["name"] == "multi\nline"


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (b'{"id":"x"}', "field 'id': expected an integer"),
        (b'{"id":3000000000}', "out of range for int32"),
        (b"[1,2]", "expected a JSON object"),
        (b'{"id":1,"at":"yesterday"}', "field 'at'"),
        (b"\xff\xfe", "not valid utf-8"),
    ],
)
def test_bad_record_is_reported_by_index_with_a_reason(payload, reason):
    decoded = codec().decoder(SIMPLE).decode([b'{"id":1}', payload, b'{"id":2}'])
    assert [r["id"] for r in decoded.batch.to_pylist()] == [1, 2]
    assert len(decoded.failures) == 1 and decoded.failures[0][0] == 1
    assert reason.lower() in decoded.failures[0][1].lower()


def test_non_string_json_value_read_into_a_string_column_keeps_its_json_text():
    schema = pa.schema([("s", pa.string())])
    decoded = codec().decoder(schema).decode([b'{"s":12}', b'{"s":{"a":[1]}}', b'{"s":true}'])
    assert decoded.batch.column(0).to_pylist() == ["12", '{"a":[1]}', "true"]


def test_fail_on_missing_field_rejects_an_absent_field_but_not_a_null_one():
    schema = pa.schema([("a", pa.int32()), ("b", pa.int32())])
    decoded = codec(**{"fail-on-missing-field": "true"}).decoder(schema).decode([b'{"a":1,"b":null}', b'{"a":1}'])
    assert decoded.batch.num_rows == 1
    assert decoded.failures == ((1, "field 'b' is missing"),)


# -- encoding choices match Flink's json format -----------------------------------------------


def encode_one(row: dict, schema: pa.Schema, **options: str) -> dict:
    batch = pa.RecordBatch.from_pylist([row], schema=schema)
    return orjson.loads(codec(**options).encoder(schema).encode(batch)[0])


def test_timestamps_are_written_in_sql_format_by_default_and_iso_on_request():
    schema = pa.schema([("ltz", pa.timestamp("us", tz="UTC")), ("ntz", pa.timestamp("us"))])
    at = dt.datetime(2024, 5, 6, 7, 8, 9, 120000)
    row = {"ltz": at.replace(tzinfo=dt.timezone.utc), "ntz": at}
    assert encode_one(row, schema) == {"ltz": "2024-05-06 07:08:09.12Z", "ntz": "2024-05-06 07:08:09.12"}
    iso = encode_one(row, schema, **{"timestamp-format.standard": "ISO-8601"})
    assert iso == {"ltz": "2024-05-06T07:08:09.12Z", "ntz": "2024-05-06T07:08:09.12"}


def test_decimals_are_json_numbers_and_plain_on_request():
    schema = pa.schema([("d", pa.decimal128(20, 2))])
    batch = pa.RecordBatch.from_pylist([{"d": Decimal("123456789012345678.91")}], schema=schema)
    assert codec().encoder(schema).encode(batch) == [b'{"d":123456789012345678.91}']


def test_ignore_null_fields_leaves_null_fields_out():
    schema = pa.schema([("a", pa.int32()), ("b", pa.string())])
    assert encode_one({"a": 1, "b": None}, schema, **{"encode.ignore-null-fields": "true"}) == {"a": 1}


def test_each_encoded_row_holds_only_its_own_bytes():
    """Nested rows take the per-row path (orjson): each output is copied to its size, since orjson (>= 3.12)
    returns it in a buffer of about 4 KB, which a batch of 10,000 rows would hold 40 MB of."""
    schema = pa.schema([("id", pa.int64()), ("tags", pa.list_(pa.string())), ("s", pa.struct([("x", pa.int64())]))])
    batch = pa.RecordBatch.from_pylist([{"id": i, "tags": ["a", str(i)], "s": {"x": i}} for i in range(2000)], schema)
    encoder = codec().encoder(schema)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        payloads = encoder.encode(batch)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert orjson.loads(payloads[7]) == {"id": 7, "tags": ["a", "7"], "s": {"x": 7}}
    text_bytes = sum(len(p) for p in payloads)
    assert held < 2 * text_bytes + 64 * len(payloads), f"{held:,} bytes held for {text_bytes:,} bytes of JSON"


def test_fail_on_missing_field_and_ignore_parse_errors_together_are_rejected():
    with pytest.raises(FormatOptionError, match="cannot both be true"):
        codec(**{"fail-on-missing-field": "true", "ignore-parse-errors": "true"})


def test_invalid_enum_option_lists_the_choices():
    with pytest.raises(
        FormatOptionError, match=r"'value\.json\.map-null-key\.mode' must be one of FAIL, DROP, LITERAL"
    ):
        codec(**{"map-null-key.mode": "skip"})


def test_decimals_are_written_plain_on_request_instead_of_in_exponent_notation():
    schema = pa.schema([("d", pa.decimal128(10, 7))])
    batch = pa.RecordBatch.from_pylist([{"d": Decimal("0.0000001")}, {"d": Decimal("0E-7")}], schema=schema)
    assert codec().encoder(schema).encode(batch) == [b'{"d":1E-7}', b'{"d":0}']
    plain = codec(**{"encode.decimal-as-plain-number": "true"}).encoder(schema).encode(batch)
    assert plain == [b'{"d":0.0000001}', b'{"d":0}']
    assert codec().decoder(schema).decode(plain).batch.to_pylist() == batch.to_pylist()


def test_decimals_lose_trailing_zeros_as_in_flinks_json_format_and_read_back_exactly():
    """Flink's json format writes a DECIMAL through Jackson's node factory, which strips trailing zeros."""
    schema = pa.schema([("d", pa.decimal128(5, 2)), ("w", pa.decimal128(20, 0))])
    rows = [
        {"d": Decimal("1.50"), "w": Decimal("454621864049246170")},
        {"d": Decimal("100.00"), "w": Decimal("0")},
    ]
    batch = pa.RecordBatch.from_pylist(rows, schema=schema)
    payloads = codec().encoder(schema).encode(batch)
    assert payloads == [b'{"d":1.5,"w":4.5462186404924617E+17}', b'{"d":1E+2,"w":0}']
    assert codec().decoder(schema).decode(payloads).batch.to_pylist() == rows


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (b'{"d":12345678901234567890}', "does not fit decimal(5,2)"),
        (b'{"d":1000}', "does not fit decimal(5,2)"),
        (b'{"d":"999.995"}', "does not fit decimal(5,2)"),
        (b'{"d":"NaN"}', "not a finite number"),
        (b'{"d":"Infinity"}', "not a finite number"),
        (b'{"d":"1.5.1"}', "field 'd'"),
    ],
)
def test_a_decimal_that_does_not_fit_its_column_is_a_bad_record(payload, reason):
    # 999.995 rounds half-up to 1000.00: more integer digits than DECIMAL(5,2) has.
    schema = pa.schema([("id", pa.int32()), ("d", pa.decimal128(5, 2))])
    decoded = codec().decoder(schema).decode([b'{"id":1,"d":1.5}', payload, b'{"id":2,"d":"-999.99"}'])
    assert decoded.batch.to_pylist() == [{"id": 1, "d": Decimal("1.50")}, {"id": 2, "d": Decimal("-999.99")}]
    assert [i for i, _ in decoded.failures] == [1]
    assert reason in decoded.failures[0][1].lower()


def test_a_decimal_with_more_fraction_digits_than_its_column_is_rounded_half_up_as_flink_reads_it():
    """Flink's json format and Spark's from_json round to the column's scale, half-up (a Debezium FLOAT column
    arrives as 3.140000104904175); a whole batch of such values and a nested one alike."""
    schema = pa.schema([("d", pa.decimal128(10, 3)), ("ds", pa.list_(pa.decimal128(5, 2)))])
    payloads = [b'{"d":3.140000104904175,"ds":[1.005,-1.005]}', b'{"d":"2.0005","ds":[]}', b'{"d":-2.0005}']
    decoded = codec().decoder(schema).decode(payloads)
    assert decoded.failures == ()
    assert decoded.batch.to_pylist() == [
        {"d": Decimal("3.140"), "ds": [Decimal("1.01"), Decimal("-1.01")]},
        {"d": Decimal("2.001"), "ds": []},
        {"d": Decimal("-2.001"), "ds": None},
    ]


@pytest.mark.parametrize("t", [pa.decimal128(30, 2), pa.list_(pa.int32()), pa.string()])
def test_json_nested_too_deeply_is_a_bad_record(t):
    schema = pa.schema([("v", t)])
    deep = b'{"v":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    decoded = codec().decoder(schema).decode([deep, b'{"v":null}'])
    assert decoded.batch.num_rows == 1
    assert [i for i, _ in decoded.failures] == [0]


# Spark and Arrow maps cannot hold a null key, so these options (kept for Flink's spelling) only matter to
# map entries handed to the writer's map conversion; it is tested directly.


def test_null_map_key_fails_by_default_naming_the_option():
    with pytest.raises(ValueError, match=r"null key; set 'json\.map-null-key\.mode' to DROP or LITERAL"):
        _map_to_json([("a", 1), (None, 2)], None, None, codec())


def test_null_map_key_is_dropped_or_written_as_the_literal_on_request():
    pairs = [("a", 1), (None, 2)]
    assert _map_to_json(pairs, None, None, codec(**{"map-null-key.mode": "DROP"})) == {"a": 1}
    literal = codec(**{"map-null-key.mode": "literal", "map-null-key.literal": "N/A"})
    assert _map_to_json(pairs, None, None, literal) == {"a": 1, "N/A": 2}


def test_timestamps_in_either_standard_are_read_whatever_the_write_setting():
    schema = pa.schema([("ltz", pa.timestamp("us", tz="UTC")), ("ntz", pa.timestamp("us"))])
    payloads = [
        b'{"ltz":"2024-05-06 07:08:09.12Z","ntz":"2024-05-06 07:08:09.12"}',
        b'{"ltz":"2024-05-06T07:08:09.12Z","ntz":"2024-05-06T07:08:09.12"}',
        b'{"ltz":"2024-05-06T09:08:09.12+02:00","ntz":"2024-05-06T07:08:09.120"}',
    ]
    rows = codec(**{"timestamp-format.standard": "ISO-8601"}).decoder(schema).decode(payloads).batch.to_pylist()
    at = dt.datetime(2024, 5, 6, 7, 8, 9, 120000)
    assert rows == [{"ltz": at.replace(tzinfo=dt.timezone.utc), "ntz": at}] * 3


def test_nan_and_infinity_are_written_as_strings_and_read_back():
    schema = pa.schema([("f", pa.float64())])
    batch = pa.RecordBatch.from_pylist([{"f": float("inf")}, {"f": float("-inf")}, {"f": 1.5}], schema=schema)
    payloads = codec().encoder(schema).encode(batch)
    assert payloads == [b'{"f":"Infinity"}', b'{"f":"-Infinity"}', b'{"f":1.5}']
    assert codec().decoder(schema).decode(payloads).batch.to_pylist() == batch.to_pylist()


def test_ignore_parse_errors_marks_the_codec_to_skip_bad_records():
    assert codec(**{"ignore-parse-errors": "true"}).ignore_parse_errors is True
    assert codec().ignore_parse_errors is False
    with pytest.raises(FormatOptionError, match=r"'value\.json\.ignore-parse-errors' must be true or false"):
        codec(**{"ignore-parse-errors": "yes"})


def test_records_that_start_with_a_json_null_are_bad_records_not_a_crash():
    """Arrow's JSON reader dies with a segmentation fault on input starting with `null` (apache/arrow#47409):
    decoded in a child process, so a crash fails this test instead of the test run."""
    script = textwrap.dedent(
        """
        import pyarrow as pa
        from pyspark_upsert_kafka.formats import CodecContext, make_codec
        schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
        decoder = make_codec("json", "key.format", {}, CodecContext("key", ("t",))).decoder(schema)
        for batch in ([b"null"], [b" null", b'{"id":1}'], [b"", b"null", b'{"id":2}']):
            decoded = decoder.decode(batch)
            print(decoded.batch.column(0).to_pylist(), [i for i, _ in decoded.failures])
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[:3] == ["[] [0]", "[1] [0]", "[2] [0, 1]"]
