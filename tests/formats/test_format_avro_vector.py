"""The avro formats' column-wise decoding (formats/avro/vector.py) against fastavro's record-by-record path,
side by side: for valid records of every type it takes, for writer schemas other than the table's
(promotions, enums, fixed, millis, fields skipped or missing), for corrupt bytes (the failures and their
reasons are fastavro's), and for avro-confluent chunks mixing several writer schema ids."""

from __future__ import annotations

import datetime as dt
import io
import json
import math
import re
import uuid

import pyarrow as pa
import pytest
from confluent_kafka.schema_registry import Schema
from fastavro import parse_schema, schemaless_writer
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pyspark_upsert_kafka.formats import CodecContext, make_codec
from pyspark_upsert_kafka.formats.avro import codec as avro_codec
from pyspark_upsert_kafka.formats.avro.codec import AvroBodyReader, records_to_batch
from pyspark_upsert_kafka.formats.avro.resolution import SchemaMismatch
from pyspark_upsert_kafka.formats.avro.schema import avro_schema
from pyspark_upsert_kafka.formats.payloads import Layout

from tests.formats.test_format_avro_confluent import confluent_client
from tests.support.arrow_strategies import PRIMITIVES, batches

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CTX = CodecContext(role="value", topics=("t",))
UTC = dt.timezone.utc

# Every column type the column-wise path takes (decimals, arrays and maps go record by record).
FLAT = [t for t in PRIMITIVES if not pa.types.is_decimal(t)]


def vector_types(depth: int = 2) -> st.SearchStrategy[pa.DataType]:
    leaf = st.sampled_from(FLAT)
    if depth == 0:
        return leaf
    field = st.tuples(vector_types(depth - 1), st.booleans())
    return leaf | st.lists(field, min_size=1, max_size=3).map(
        lambda fs: pa.struct([pa.field(f"f{i}", t, nullable=n) for i, (t, n) in enumerate(fs)])
    )


def reference(body: AvroBodyReader, payloads: list[bytes], start: int = 0):
    """What fastavro's record-by-record path gives: (rows, failures)."""
    records: list = [None] * len(payloads)
    failures: dict[int, str] = {}
    body.read_all(payloads, start, records, failures)
    decoded = records_to_batch(records, failures, body.schema)
    return decoded.batch, decoded.failures


def rows(batch: pa.RecordBatch) -> list:
    """The rows, NaN made comparable (a corrupt float may read as NaN)."""

    def plain(v):
        if isinstance(v, float) and math.isnan(v):
            return "NaN"
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        return v

    return [plain(r) for r in batch.to_pylist()]


def _unplaced(reason: str) -> str:
    """fastavro's reasons name its buffer object by address: different on each run."""
    return re.sub(r" at 0x[0-9a-f]+", "", reason)


def write(writer: dict, records: list[dict]) -> list[bytes]:
    parsed = parse_schema(writer)
    out = []
    for record in records:
        buffer = io.BytesIO()
        schemaless_writer(buffer, parsed, record)
        out.append(buffer.getvalue())
    return out


def assert_same_as_fastavro(writer: dict, schema: pa.Schema, payloads: list[bytes], *, column_wise: bool) -> None:
    body = AvroBodyReader(writer, schema)
    assert (body.vector is not None) is True, "these schemas take the column-wise path"
    batch, failures = body.decode(payloads, Layout.of(payloads), None, 0)
    expected_batch, expected_failures = reference(body, payloads)
    assert batch.schema == schema
    assert rows(batch) == rows(expected_batch)
    assert [(i, _unplaced(r)) for i, r in sorted(failures.items())] == [(i, _unplaced(r)) for i, r in expected_failures]
    if column_wise:
        assert body.vector.read(Layout.of(payloads), None, 0) is not None


# -- valid records -------------------------------------------------------------------------------


def test_a_flat_chunk_is_decoded_without_fastavro_reading_record_by_record(monkeypatch):
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("price", pa.float64()), ("n", pa.int32())])
    batch = pa.RecordBatch.from_pylist(
        [{"id": i, "name": f"customer-{i}" * (i % 3), "price": i / 7, "n": -i} for i in range(1000)], schema=schema
    )
    codec = make_codec("avro", "value.format", {}, CTX)
    payloads = codec.encoder(schema).encode(batch)

    def per_record(*args, **kwargs):
        raise AssertionError("fastavro called per record")

    monkeypatch.setattr(avro_codec, "schemaless_reader", per_record)
    decoded = codec.decoder(schema).decode(payloads)

    assert decoded.failures == ()
    assert decoded.batch.equals(batch)


@SETTINGS
@given(batches(column_types=vector_types()))
def test_column_wise_decoding_gives_fastavros_rows_for_any_flat_or_nested_record(batch):
    writer = avro_schema(batch.schema)
    codec = make_codec("avro", "value.format", {}, CTX)
    payloads = codec.encoder(batch.schema).encode(batch)
    assert_same_as_fastavro(writer, batch.schema, payloads, column_wise=True)
    assert rows(codec.decoder(batch.schema).decode(payloads).batch) == rows(batch)


# Writer schemas other than the table's: each column read through a different writer type.
EVOLVED_WRITER = {
    "type": "record",
    "name": "Evolved",
    "namespace": "shop",
    "fields": [
        {"name": "dropped", "type": "string"},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["BOOK", "GAME", "FILM"]}},
        {"name": "code", "type": {"type": "fixed", "name": "Code", "size": 3}},
        {"name": "wide", "type": "int"},
        {"name": "ratio", "type": ["long", "null"]},
        {"name": "small", "type": "long"},
        {"name": "single", "type": "float"},
        {"name": "at", "type": ["null", {"type": "long", "logicalType": "timestamp-millis"}]},
        {"name": "local", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "skipped", "type": {"type": "record", "name": "Skipped", "fields": [
            {"name": "a", "type": ["null", "bytes"]}, {"name": "k", "type": "Kind"},
            {"name": "when", "type": {"type": "long", "logicalType": "timestamp-micros"}}]}},
        {"name": "again", "type": "Kind"},
    ],
}  # fmt: skip
EVOLVED_TABLE = pa.schema(
    [
        ("kind", pa.string()),
        ("code", pa.binary()),
        ("wide", pa.int64()),  # int -> long
        ("ratio", pa.float64()),  # long -> double, null branch second
        ("small", pa.float32()),  # long -> float
        ("single", pa.float64()),  # float -> double
        ("at", pa.timestamp("us", tz="UTC")),
        ("local", pa.timestamp("us")),
        ("day", pa.date32()),
        ("again", pa.string()),
        ("missing", pa.string()),  # not in the writer: null
    ]
)
MILLIS = st.integers(-62_135_596_800_000, 253_402_300_799_999)
EVOLVED_RECORDS = st.fixed_dictionaries(
    {
        "dropped": st.text(max_size=20),
        "kind": st.sampled_from(["BOOK", "GAME", "FILM"]),
        "code": st.binary(min_size=3, max_size=3),
        "wide": st.integers(-(2**31), 2**31 - 1),
        "ratio": st.none() | st.integers(-(2**63), 2**63 - 1),
        "small": st.integers(-(2**63), 2**63 - 1),
        "single": st.floats(width=32, allow_nan=False),
        "at": st.none() | MILLIS.map(lambda ms: dt.datetime(1970, 1, 1, tzinfo=UTC) + dt.timedelta(milliseconds=ms)),
        "local": MILLIS.map(lambda ms: dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=ms)),
        "day": st.dates(),
        "skipped": st.fixed_dictionaries(
            {"a": st.none() | st.binary(max_size=20), "k": st.just("GAME"), "when": st.integers(0, 2**50)}
        ),
        "again": st.sampled_from(["BOOK", "FILM"]),
    }
)


@SETTINGS
@given(st.lists(EVOLVED_RECORDS, max_size=12))
def test_column_wise_decoding_resolves_another_writer_schema_as_fastavro_does(records):
    payloads = write(EVOLVED_WRITER, records)
    assert_same_as_fastavro(EVOLVED_WRITER, EVOLVED_TABLE, payloads, column_wise=True)


def test_writer_types_outside_the_column_wise_path_are_read_record_by_record():
    table = pa.schema([("id", pa.int32()), ("tags", pa.list_(pa.string()))])
    body = AvroBodyReader(avro_schema(table), table)
    assert body.vector is None
    narrowing = {"type": "record", "name": "r", "fields": [{"name": "id", "type": "long"}]}
    # long -> int: no resolution, so no record of the writer's could be read (fastavro refused each one).
    with pytest.raises(SchemaMismatch, match=r"field 'id': the writer writes long, the table reads \['null', 'int'\]"):
        AvroBodyReader(narrowing, pa.schema([("id", pa.int32())]))


# -- corrupt records -----------------------------------------------------------------------------


@st.composite
def damaged(draw, payloads: list[bytes]) -> list[bytes]:
    """The payloads with some of them cut, extended, overwritten in places, or replaced by random bytes."""
    out = list(payloads)
    for i in draw(st.lists(st.integers(0, len(out) - 1), max_size=4)):
        p = out[i]
        how = draw(st.sampled_from(["cut", "extend", "flip", "random"]))
        if how == "cut":
            out[i] = p[: draw(st.integers(0, max(len(p) - 1, 0)))]
        elif how == "extend":
            out[i] = p + draw(st.binary(min_size=1, max_size=4))
        elif how == "flip" and p:
            at = draw(st.integers(0, len(p) - 1))
            out[i] = p[:at] + bytes([draw(st.integers(0, 255))]) + p[at + 1 :]
        else:
            out[i] = draw(st.binary(max_size=30))
    return out


@SETTINGS
@given(st.data())
def test_corrupt_records_fail_with_fastavros_reasons_and_the_others_still_decode(data):
    batch = data.draw(batches(column_types=vector_types(), max_columns=3))
    assume(batch.num_rows > 0)
    payloads = make_codec("avro", "value.format", {}, CTX).encoder(batch.schema).encode(batch)
    broken = data.draw(damaged(payloads))
    assert_same_as_fastavro(avro_schema(batch.schema), batch.schema, broken, column_wise=False)


@SETTINGS
@given(st.lists(EVOLVED_RECORDS, min_size=1, max_size=6), st.data())
def test_corrupt_records_of_another_writer_schema_fail_as_with_fastavro(records, data):
    broken = data.draw(damaged(write(EVOLVED_WRITER, records)))
    assert_same_as_fastavro(EVOLVED_WRITER, EVOLVED_TABLE, broken, column_wise=False)


def test_a_truncated_record_is_named_with_fastavros_reason_among_decoded_ones():
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    batch = pa.RecordBatch.from_pylist([{"id": i, "name": f"n{i}"} for i in range(5)], schema=schema)
    codec = make_codec("avro", "value.format", {}, CTX)
    payloads = codec.encoder(schema).encode(batch)
    payloads[2] = payloads[2][:-1]
    payloads[3] = payloads[3] + b"\x00"

    decoded = codec.decoder(schema).decode(payloads)

    assert [r["id"] for r in decoded.batch.to_pylist()] == [0, 1, 4]
    assert decoded.failures == (
        (2, "malformed or truncated Avro data (the record runs past the end of its bytes)"),
        (3, "1 byte(s) left after the Avro record"),
    )


# -- avro-confluent: several writer schemas in one chunk -------------------------------------------

V1 = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": "string"}]}
V2 = {
    "type": "record",
    "name": "Order",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": "string"},
        {"name": "note", "type": ["null", "string"], "default": None},
    ],
}
TABLE = pa.schema([("id", pa.int64()), ("name", pa.string()), ("note", pa.string())])


def test_a_chunk_mixing_writer_schema_ids_decodes_each_with_its_schema_in_the_records_order(registry_url):
    client = confluent_client(registry_url)
    subject = f"vector-{uuid.uuid4().hex}"
    first = client.register_schema(subject, Schema(json.dumps(V1), "AVRO"))
    second = client.register_schema(subject, Schema(json.dumps(V2), "AVRO"))
    assert first != second

    def framed(schema_id: int, writer: dict, record: dict) -> bytes:
        return b"\x00" + schema_id.to_bytes(4, "big") + write(writer, [record])[0]

    payloads = [
        framed(first, V1, {"id": 1, "name": "a"}),
        framed(second, V2, {"id": 2, "name": "b", "note": "x"}),
        b"\x01nope",  # not framed
        framed(first, V1, {"id": 3, "name": "c"}),
        framed(second, V2, {"id": 4, "name": "d", "note": None})[:-1],  # truncated
        framed(2**31 - 9, V1, {"id": 5, "name": "e"}),  # an id the registry lacks
        framed(second, V2, {"id": 6, "name": "f", "note": "y"}),
    ]
    decoder = make_codec("avro-confluent", "value.format", {"url": registry_url}, CTX).decoder(TABLE)

    decoded = decoder.decode(payloads)

    assert decoded.batch.to_pylist() == [
        {"id": 1, "name": "a", "note": None},
        {"id": 2, "name": "b", "note": "x"},
        {"id": 3, "name": "c", "note": None},
        {"id": 6, "name": "f", "note": "y"},
    ]
    reasons = dict(decoded.failures)
    assert sorted(reasons) == [2, 4, 5]
    assert "not in the Confluent wire format" in reasons[2]
    assert "runs past the end" in reasons[4] or "truncated" in reasons[4]
    assert "id 2147483639" in reasons[5]
    # The same chunk with one id only: the column-wise path for all, same rows.
    ones = [p for p in payloads if p[:5] == b"\x00" + first.to_bytes(4, "big")]
    assert decoder.decode(ones).batch.to_pylist() == [
        {"id": 1, "name": "a", "note": None},
        {"id": 3, "name": "c", "note": None},
    ]


@pytest.mark.parametrize("payloads", [[], [b""], [b"\x00\x00"]])
def test_empty_and_headerless_payloads_are_failures_not_rows(payloads, registry_url):
    decoder = make_codec("avro-confluent", "value.format", {"url": registry_url}, CTX).decoder(TABLE)
    decoded = decoder.decode(payloads)
    assert decoded.batch.num_rows == 0 and decoded.batch.schema == TABLE
    assert [i for i, _ in decoded.failures] == list(range(len(payloads)))


def _long(v: int) -> bytes:
    v = (v << 1) ^ (v >> 63)
    out = bytearray()
    while v > 0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


# Bodies at the edges of what the column-wise path vouches for, each next to a valid one: each must come
# out as fastavro has it (a value, or a failure with its reason).
EDGES = [
    ("boolean", pa.bool_(), [b"\x01", b"\x02", b"\xff"]),
    ("int", pa.int8(), [_long(127), _long(128), _long(-129)]),
    ("int", pa.int16(), [_long(2**15), _long(-(2**15))]),
    ("int", pa.int32(), [_long(2**40), _long(-(2**31))]),
    ("long", pa.int64(), [b"\xff" * 9 + b"\x01", b"\xff" * 9 + b"\x7f", b"\x80" * 10 + b"\x00", b"\x80\x00"]),
    ({"type": "int", "logicalType": "date"}, pa.date32(), [_long(-719_162), _long(-719_163), _long(2_932_897)]),
    (
        {"type": "long", "logicalType": "timestamp-micros"},
        pa.timestamp("us", tz="UTC"),
        [_long(253_402_300_799_999_999), _long(253_402_300_800_000_000), _long(-62_135_596_800_000_001)],
    ),
    (
        {"type": "long", "logicalType": "local-timestamp-millis"},
        pa.timestamp("us"),
        [_long(253_402_300_799_999), _long(253_402_300_800_000), _long(2**62)],
    ),
    ({"type": "enum", "name": "E", "symbols": ["A", "B"]}, pa.string(), [_long(1), _long(-1), _long(2)]),
    ("string", pa.string(), [_long(2) + b"\xc3\xa9", _long(1) + b"\xff", _long(-1), _long(5) + b"ab"]),
    (["null", "string"], pa.string(), [_long(0), _long(2) + _long(1) + b"x", _long(-1)]),
    (["string", "null"], pa.string(), [_long(1), _long(0) + _long(1) + b"x"]),
    ("float", pa.float64(), [b"\x00\x00\xc0\x7f", b"\x01\x00\x80\x7f", b"\x00\x00"]),
    ("long", pa.float32(), [_long(2**62 + 1), _long(16_777_217)]),
]


@pytest.mark.parametrize(
    ("avro", "column", "bodies"), EDGES, ids=[str(e[1]) + "-" + str(i) for i, e in enumerate(EDGES)]
)
def test_values_at_the_edges_decode_as_fastavro_has_them(avro, column, bodies):
    writer = {"type": "record", "name": "r", "fields": [{"name": "v", "type": avro}]}
    schema = pa.schema([pa.field("v", column, nullable=isinstance(avro, list))])
    valid = bodies[0]
    for body in bodies:
        assert_same_as_fastavro(writer, schema, [valid, body, valid], column_wise=False)


@pytest.mark.parametrize("nullable", [False, True], ids=["string", "union"])
def test_a_string_length_near_two_to_the_63_is_a_bad_record_not_a_read_outside_the_buffer(nullable):
    """A mutated length of 2**63 - 1 made `pos + size` overflow past the bounds check, so the column-wise
    reader's views pointed outside its buffer (a segfault in the fuzz suite once key columns became NOT NULL)."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable), pa.field("region", pa.string(), nullable)])
    branch = b"\x02" if nullable else b""  # the union's second branch: the value
    good = branch + b"\x02" + branch + b"\x04eu"
    huge = branch + b"\x02" + branch + b"\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01" + b"\x00"
    role = "value" if nullable else "key"
    decoded = make_codec("avro", f"{role}.format", {}, CodecContext(role)).decoder(schema).decode([good, huge, good])
    assert decoded.batch.to_pylist() == [{"id": 1, "region": "eu"}] * 2
    assert [i for i, _ in decoded.failures] == [1]
