"""Spark's TIME (Arrow time64[ns]) in the json, csv and avro formats, as Flink 2.2.1's formats write it (the golden
cases time_* prove the bytes on Flink's own records; formats/time_text.py): the column-wise paths and the per-record
paths give the same values, what no TIME is names its record, and a value a format would lose fails the write."""

from __future__ import annotations

import datetime as dt

import orjson
import pyarrow as pa
import pytest
from pyspark_upsert_kafka.formats import CodecContext, make_codec

CTX = CodecContext("value", ("t",))
SCHEMA = pa.schema([pa.field("id", pa.int32()), pa.field("t", pa.time64("ns"))])
TIMES = [dt.time(0, 0), dt.time(23, 59, 59, 999000), None, dt.time(12, 34, 56, 120000), dt.time(1, 2, 3, 4)]


def _codec(fmt: str):
    return make_codec(fmt, "value.format", {}, CTX)


def _batch(times: list[dt.time | None], schema: pa.Schema = SCHEMA) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([pa.array(range(len(times)), pa.int32()), pa.array(times, pa.time64("ns"))],
                                      schema=schema)  # fmt: skip


def test_json_writes_whole_seconds_as_flink_and_refuses_a_fraction_it_would_lose():
    encoder = _codec("json").encoder(SCHEMA)
    assert encoder.encode(_batch([dt.time(0, 0), dt.time(23, 59, 59), None])) == [
        b'{"id":0,"t":"00:00:00"}', b'{"id":1,"t":"23:59:59"}', b'{"id":2,"t":null}',
    ]  # fmt: skip
    with pytest.raises(ValueError, match=r"column 't': the TIME 12:34:56\.12 has a fraction of a second.*12:34:56 "):
        encoder.encode(_batch([dt.time(0, 0), dt.time(12, 34, 56, 120000)]))
    nested = pa.schema([pa.field("id", pa.int32()), pa.field("t", pa.list_(pa.time64("ns")))])
    rows = pa.RecordBatch.from_arrays([pa.array([1], pa.int32()), pa.array([[dt.time(1, 2, 3), None]], nested[1].type)],
                                      schema=nested)  # fmt: skip
    assert _codec("json").encoder(nested).encode(rows) == [b'{"id":1,"t":["01:02:03",null]}']
    with pytest.raises(ValueError, match=r"TIME 00:00:00\.000001 has a fraction"):
        _codec("json").encoder(nested).encode(pa.RecordBatch.from_arrays(
            [pa.array([1], pa.int32()), pa.array([[dt.time(0, 0, 0, 1)]], nested[1].type)], schema=nested))  # fmt: skip


def test_json_reads_flinks_text_and_a_fraction_the_same_on_the_batch_and_the_record_paths():
    payloads = [b'{"id":0,"t":"00:00:00"}', b'{"id":1,"t":"23:59:59.999"}', b'{"id":2,"t":null}',
                b'{"id":3,"t":"12:34:56.12"}', b'{"id":4,"t":"01:02:03.000004"}']  # fmt: skip
    batch = _codec("json").decoder(SCHEMA).decode(payloads).batch  # Arrow's reader, then the column parsed
    assert batch.column(1).to_pylist() == TIMES
    one_by_one = [_codec("json").decoder(SCHEMA).decode([p]).batch.column(1)[0].as_py() for p in payloads]
    multi_line = _codec("json").decoder(SCHEMA).decode([p.replace(b",", b",\n") for p in payloads]).batch
    assert one_by_one == TIMES and multi_line.column(1).to_pylist() == TIMES  # a payload over lines: per record


@pytest.mark.parametrize(
    ("text", "reason"),
    [("24:00:00", "is not a time"), ("12:34", "is not a time"), ("1:02:03", "is not a time"), ("12", "expected str"),
     ("12:34:56.123456789", "finer than a microsecond")],
)  # fmt: skip
def test_json_names_the_record_whose_value_is_no_time(text, reason):
    value = text.encode() if text == "12" else f'"{text}"'.encode()
    decoded = _codec("json").decoder(SCHEMA).decode([b'{"id":0,"t":"00:00:01"}', b'{"id":1,"t":' + value + b"}"])
    assert decoded.batch.column(1).to_pylist() == [dt.time(0, 0, 1)]
    ((index, why),) = decoded.failures
    assert index == 1 and "field 't'" in why and reason in why, why


def test_csv_writes_and_reads_javas_iso_local_time_as_flinks_csv():
    codec = _codec("csv")
    written = codec.encoder(SCHEMA).encode(_batch(TIMES))
    assert written == [b"0,00:00:00", b"1,23:59:59.999", b"2,", b"3,12:34:56.12", b"4,01:02:03.000004"]
    assert codec.decoder(SCHEMA).decode(written).batch.column(1).to_pylist() == TIMES
    decoded = codec.decoder(SCHEMA).decode([b"0,12:34", b"1,25:00:00", b"2,07:08:09.5"])  # ISO_LOCAL_TIME: `HH:mm`
    assert decoded.batch.column(1).to_pylist() == [dt.time(12, 34), dt.time(7, 8, 9, 500000)]
    assert [i for i, _ in decoded.failures] == [1]


def test_avro_is_flinks_time_millis_and_refuses_a_finer_value():
    codec = _codec("avro")
    (_, field) = codec.writer_schema(SCHEMA)["fields"]
    assert field["type"] == ["null", {"type": "int", "logicalType": "time-millis"}]
    millis = [t for t in TIMES if t is None or t.microsecond % 1000 == 0]
    written = codec.encoder(SCHEMA).encode(_batch(millis))
    # id 1 and t 23:59:59.999, each a union branch 1 (nullable), t the zigzag varint of 86_399_999 ms: Flink's bytes
    # for that time (the golden case time_avro, `feefb252`)
    assert written[1] == b"\x02\x02\x02\xfe\xef\xb2\x52"
    assert codec.decoder(SCHEMA).decode(written).batch.column(1).to_pylist() == millis
    with pytest.raises(ValueError, match=r"finer than a millisecond.*t TIME\(3\).*CAST\(column AS TIME\(3\)\)"):
        codec.encoder(SCHEMA).encode(_batch([dt.time(1, 2, 3, 4)]))


@pytest.mark.parametrize("fmt", ["debezium-json", "canal-json", "maxwell-json", "ogg-json"])
def test_change_envelopes_read_a_time_column_wise_as_envelope_by_envelope(fmt):
    rows = [{"id": 1, "t": "12:34:56"}, {"id": 2, "t": "00:00:01.5"}]
    wrap = {
        "debezium-json": lambda r: {"before": None, "after": r, "op": "c"},
        "canal-json": lambda r: {"data": [r], "type": "INSERT", "database": "d", "table": "t"},
        "maxwell-json": lambda r: {"database": "d", "table": "t", "type": "insert", "data": r},
        "ogg-json": lambda r: {"table": "D.T", "op_type": "I", "after": r},
    }[fmt]
    payloads = [orjson.dumps(wrap(r)) for r in [*rows, {"id": 3, "t": "25:00:00"}]]
    decoder = _codec(fmt).changelog_decoder(SCHEMA)
    fast = decoder._decode_fast(payloads[:2])
    assert fast is not None and fast[1] == []  # the whole batch column-wise
    expected = [{"id": 1, "t": dt.time(12, 34, 56)}, {"id": 2, "t": dt.time(0, 0, 1, 500000)}]
    assert fast[0].batch.to_pylist() == expected
    decoded = decoder.decode_changes(payloads)  # the bad one sends its envelope the per-envelope way, named
    assert decoded.batch.to_pylist() == expected
    ((index, why),) = decoded.failures
    assert index == 2 and "'25:00:00' is not a time" in why, why
