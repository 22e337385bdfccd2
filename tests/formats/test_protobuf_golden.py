"""The protobuf golden corpus (integration/protobuf_golden.py): bytes the official protobuf library and
confluent-kafka's ProtobufSerializer wrote, read back exactly, through Kafka and Spark.

protobuf-confluent records carry the ids of the registry they were written against: the test registers the same
schemas (references first) on the session's registry and puts its ids in the headers; the rest of each record is
compared as written.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark_upsert_kafka.formats import CodecContext, make_codec

from tests.support.kafka_io import produce
from tests.support.registry_fixtures import register_golden, with_id

GOLDEN = Path(__file__).parent / "golden" / "protobuf"
DESCRIPTOR_FILE = str(GOLDEN / "shop.desc")
EPOCH = dt.datetime(1970, 1, 1)


def load(name: str) -> dict:
    return json.loads((GOLDEN / name).read_text())


def as_golden(row: dict) -> dict:
    """A Spark row in the corpus's JSON form: bytes as base64, a TIMESTAMP (session time zone UTC) as microseconds,
    a map as [key, value] pairs."""
    out = dict(row)
    out["blob"] = base64.b64encode(bytes(row["blob"])).decode()
    out["at"] = None if row["at"] is None else (row["at"] - EPOCH) // dt.timedelta(microseconds=1)
    out["attrs"] = sorted([k, v] for k, v in row["attrs"].items())
    return out


def test_messages_the_protobuf_library_wrote_read_back_exactly(spark, new_topic, options, bootstrap):
    golden = load("protobuf.json")
    topic = new_topic()
    records = [(json.dumps({"id": r["row"]["id"]}).encode(), bytes.fromhex(r["hex"])) for r in golden["records"]]
    produce(bootstrap, topic, records)
    opts = options(topic, {"read.mode": "table", "value.format": "protobuf"})
    opts |= {"value.protobuf.message-class-name": golden["message"], "value.protobuf.descriptor-file": DESCRIPTOR_FILE}

    df = spark.read.format("upsert-kafka").options(**opts).load()  # the columns: the message's fields

    assert df.schema.simpleString() == (
        "struct<id:int,name:string,big:bigint,huge:bigint,small_u:bigint,price:double,ratio:float,paid:boolean,"
        "blob:binary,kind:string,tags:array<string>,attrs:map<string,bigint>,total:struct<currency:string,"
        "units:bigint>,lines:array<struct<sku:string,qty:int>>,at:timestamp,maybe:bigint,card:string,voucher:int>"
    )
    rows = sorted((as_golden(r.asDict(recursive=True)) for r in df.collect()), key=lambda r: r["id"])
    assert rows == sorted((r["row"] for r in golden["records"]), key=lambda r: r["id"])


def test_records_confluents_protobuf_serializer_wrote_read_back_exactly(
    spark, new_topic, options, bootstrap, registry_url
):
    golden = load("protobuf_confluent.json")
    topic = new_topic()
    ids = register_golden(registry_url, golden["registered"], lambda s: s.replace(golden["topic"], topic))
    orders = [r for r in golden["records"] if r["subject"] == f"{golden['topic']}-value"]
    produce(bootstrap, topic, [(json.dumps({"id": r["row"]["id"]}).encode(), with_id(bytes.fromhex(r["hex"]), ids))
                               for r in orders])  # fmt: skip
    opts = options(topic, {"read.mode": "table", "value.format": "protobuf-confluent"})
    opts["value.protobuf-confluent.url"] = registry_url

    # No .schema(...) and no message type: the columns come from the first message of <topic>-value's latest schema,
    # whose reference (shop/common.proto, under its own subject) is resolved.
    df = spark.read.format("upsert-kafka").options(**opts).load()

    assert df.columns[:3] == ["id", "name", "big"] and df.schema["total"].dataType.simpleString() == (
        "struct<currency:string,units:bigint>"
    )
    rows = sorted((as_golden(r.asDict(recursive=True)) for r in df.collect()), key=lambda r: r["id"])
    assert rows == sorted((r["row"] for r in orders), key=lambda r: r["id"])


def test_the_message_indexes_confluents_serializer_wrote_name_the_message_read(registry_url, new_topic):
    golden = load("protobuf_confluent.json")
    topic = new_topic()
    ids = register_golden(registry_url, golden["registered"], lambda s: s.replace(golden["topic"], topic))
    codec = make_codec("protobuf-confluent", "value.format", {"url": registry_url},
                       CodecContext("value", (topic,)))  # fmt: skip
    for case, columns in (
        ("refund", pa.schema([("order_id", pa.int32()), ("reason", pa.string())])),  # indexes [1]
        ("nested_line", pa.schema([("sku", pa.string()), ("qty", pa.int32())])),  # indexes [0, 0]
    ):
        record = next(r for r in golden["records"] if r["case"] == case)
        decoded = codec.decoder(columns).decode([with_id(bytes.fromhex(record["hex"]), ids)])
        assert decoded.failures == ()
        assert decoded.batch.to_pylist() == [record["row"]]


STOCK_COLUMNS = pa.schema(
    [("sku", pa.int64()), ("label", pa.string()), ("count", pa.int32()), ("active", pa.bool_()),
     ("place", pa.string()), ("bins", pa.list_(pa.int32())),
     ("box", pa.struct([("weight", pa.float64()), ("note", pa.string())])), ("delta", pa.int64()),
     ("lot", pa.int64()), ("code", pa.binary())]
)  # fmt: skip


def proto2_codec(**options: str):
    golden = load("protobuf.json")["proto2"]
    given = {"message-class-name": golden["message"], "descriptor-file": DESCRIPTOR_FILE} | options
    return make_codec("protobuf", "value.format", given, CodecContext("value", ("stock",)))


def as_proto2_golden(row: dict) -> dict:
    return {**row, "code": None if row["code"] is None else base64.b64encode(row["code"]).decode()}


def test_proto2_messages_read_absent_fields_as_null_or_as_their_declared_defaults():
    golden = load("protobuf.json")["proto2"]["records"]
    payloads = [bytes.fromhex(r["hex"]) for r in golden]
    assert proto2_codec().inferred_schema() == STOCK_COLUMNS
    for options, expected in (({}, "row"), ({"read-default-values": "true"}, "row_defaults")):
        decoded = proto2_codec(**options).decoder(STOCK_COLUMNS).decode(payloads)
        assert decoded.failures == ()
        assert [as_proto2_golden(r) for r in decoded.batch.to_pylist()] == [r[expected] for r in golden]


def test_proto2_rows_written_are_the_protobuf_librarys_bytes_and_a_null_required_field_fails_its_row():
    golden = load("protobuf.json")["proto2"]["records"]
    rows = [{**r["row"], "code": None if r["row"]["code"] is None else base64.b64decode(r["row"]["code"])}
            for r in golden]  # fmt: skip
    encoder = proto2_codec().encoder(STOCK_COLUMNS)
    assert encoder.encode(pa.RecordBatch.from_pylist(rows, STOCK_COLUMNS)) == [bytes.fromhex(r["hex"]) for r in golden]
    with pytest.raises(ValueError, match=r"missing required fields: sku.*filter or coalesce"):
        encoder.encode(pa.RecordBatch.from_pylist([{**rows[0], "sku": None}], STOCK_COLUMNS))
