"""The protobuf format's exactness and its errors, on the codec alone: every value a column cannot hold exactly
fails its record (reading) or row (writing) with a reason naming the field and what to change; options that
cannot work fail before any task runs."""

from __future__ import annotations

import base64
import datetime as dt
import shutil
import sys
import uuid
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest
from google.protobuf import descriptor_pb2, timestamp_pb2
from pyspark_upsert_kafka.formats import CodecContext, FormatOptionError, make_codec
from pyspark_upsert_kafka.formats.protobuf.confluent_codec import (
    ProtobufConfluentDecoder,
    message_indexes,
    split_record,
)
from pyspark_upsert_kafka.formats.protobuf.derived import derived_message
from pyspark_upsert_kafka.formats.protobuf.schema import arrow_schema, message_class, pool_of

DESCRIPTOR_FILE = str(Path(__file__).parent / "golden" / "protobuf" / "shop.desc")
CONTEXT = CodecContext("value", ("orders",))


def codec(**options: str):
    given = {"message-class-name": "shop.Order", "descriptor-file": DESCRIPTOR_FILE}
    return make_codec("protobuf", "value.format", given | {k.replace("_", "-"): v for k, v in options.items()}, CONTEXT)


def order_class() -> type:
    with open(DESCRIPTOR_FILE, "rb") as f:
        files = descriptor_pb2.FileDescriptorSet.FromString(f.read()).file
    return message_class(pool_of(files).FindMessageTypeByName("shop.Order"))


Order = order_class()


def decode(schema: pa.Schema, *messages, **options: str):
    return codec(**options).decoder(schema).decode([m.SerializeToString() for m in messages])


def test_a_uint64_above_bigints_maximum_fails_its_record_and_a_decimal_column_holds_it_exactly():
    big, small = Order(id=1, huge=2**64 - 1), Order(id=2, huge=5)
    as_bigint = decode(pa.schema([("id", pa.int32()), ("huge", pa.int64())]), big, small)
    assert as_bigint.batch.to_pylist() == [{"id": 2, "huge": 5}]
    assert as_bigint.failures == (
        (0, "field 'shop.Order.huge': 18446744073709551615 does not fit the column's 64-bit integer "
            "(a DECIMAL(20, 0) column holds every uint64)"),
    )  # fmt: skip
    as_decimal = decode(pa.schema([("huge", pa.decimal128(20, 0))]), big)
    assert as_decimal.failures == () and as_decimal.batch.to_pylist() == [{"huge": Decimal(2**64 - 1)}]


def test_an_int64_into_an_int_column_is_exact_or_fails_its_record():
    decoded = decode(pa.schema([("big", pa.int32())]), Order(big=2**31 - 1), Order(big=2**31))
    assert decoded.batch.to_pylist() == [{"big": 2**31 - 1}]
    assert decoded.failures == ((1, "field 'shop.Order.big': 2147483648 does not fit the column's 32-bit integer"),)


def test_a_timestamp_with_nanoseconds_fails_its_record_naming_the_struct_that_holds_it():
    fine, nanos = Order(id=1), Order(id=2)
    fine.at.seconds, fine.at.nanos = 10, 5000
    nanos.at.seconds, nanos.at.nanos = 10, 5001
    decoded = decode(pa.schema([("at", pa.timestamp("us", tz="UTC"))]), fine, nanos)
    assert decoded.batch.column(0).cast(pa.int64()).to_pylist() == [10_000_005]
    assert "STRUCT<seconds BIGINT, nanos INT>" in decoded.failures[0][1] and decoded.failures[0][0] == 1
    as_struct = decode(pa.schema([("at", pa.struct([("seconds", pa.int64()), ("nanos", pa.int32())]))]), nanos)
    assert as_struct.batch.to_pylist() == [{"at": {"seconds": 10, "nanos": 5001}}]


def test_an_enum_number_the_enum_does_not_name_fails_its_record():
    decoded = decode(pa.schema([("kind", pa.string())]), Order(kind=2), Order(kind=9))  # proto3 keeps unknown numbers
    assert decoded.batch.to_pylist() == [{"kind": "GAME"}]
    assert decoded.failures == ((1, "field 'shop.Order.kind': 9 is not a value of enum 'shop.Kind'"),)


def test_read_default_values_reads_absent_fields_with_presence_as_their_defaults():
    schema = pa.schema(
        [("name", pa.string()), ("total", pa.struct([("currency", pa.string())])), ("maybe", pa.int64())]
    )
    assert decode(schema, Order()).batch.to_pylist() == [{"name": None, "total": None, "maybe": None}]
    defaults = decode(schema, Order(), read_default_values="true").batch.to_pylist()
    assert defaults == [{"name": "", "total": {"currency": ""}, "maybe": 0}]


def test_bytes_that_are_not_a_message_fail_their_record():
    decoded = codec().decoder(pa.schema([("id", pa.int32())])).decode([b"\x08\x01", b"\xff\xff\xff"])
    assert decoded.batch.to_pylist() == [{"id": 1}]
    assert decoded.failures[0][0] == 1 and "not a protobuf message of the format's type" in decoded.failures[0][1]


def test_a_null_into_a_field_without_presence_fails_the_row_naming_optional():
    encoder = codec().encoder(pa.schema([("id", pa.int32()), ("name", pa.string())]))
    assert Order.FromString(encoder.encode(pa.record_batch({"id": [1], "name": [None]}))[0]) == Order(id=1)
    with pytest.raises(ValueError, match=r"field 'shop.Order.id' is null.*declare the field `optional`"):
        encoder.encode(pa.record_batch({"id": pa.array([None], pa.int32()), "name": ["a"]}))


def test_a_null_element_is_written_as_the_null_string_literal_only_where_it_is_a_string():
    encoder = codec(write_null_string_literal="N/A").encoder(
        pa.schema([("tags", pa.list_(pa.string())), ("attrs", pa.map_(pa.string(), pa.int64()))])
    )
    tags = pa.array([["a", None]], pa.list_(pa.string()))
    [payload] = encoder.encode(
        pa.record_batch([tags, pa.array([[]], pa.map_(pa.string(), pa.int64()))], ["tags", "attrs"])
    )
    assert list(Order.FromString(payload).tags) == ["a", "N/A"]
    attrs = pa.array([[("k", None)]], pa.map_(pa.string(), pa.int64()))
    with pytest.raises(
        ValueError, match=r"a map value of protobuf field 'shop\.Order\.attrs' is null: protobuf has no null there"
    ):
        encoder.encode(pa.record_batch([pa.array([[]], pa.list_(pa.string())), attrs], ["tags", "attrs"]))


def test_an_int_out_of_the_fields_range_fails_the_row():
    encoder = codec().encoder(pa.schema([("id", pa.int64())]))
    with pytest.raises(ValueError, match=r"^Value out of range: 2147483648$"):  # protobuf's own check (int32)
        encoder.encode(pa.record_batch({"id": [2**31]}))


def test_columns_the_message_cannot_hold_exactly_fail_before_any_task_runs():
    with pytest.raises(FormatOptionError, match=r"'shop.Order.ratio' \(float\) cannot be read or written exactly"):
        codec().check_writable(pa.schema([("ratio", pa.float64())]))  # a DOUBLE into a float field would round
    with pytest.raises(FormatOptionError, match=r"column 'nope' is not a field of protobuf message 'shop\.Order'"):
        codec().decoder(pa.schema([("nope", pa.int32())]))


def test_the_message_type_options_are_required_and_checked_on_the_driver(tmp_path):
    with pytest.raises(FormatOptionError, match=r"'value\.protobuf\.message-class-name' is required"):
        make_codec("protobuf", "value.format", {}, CONTEXT)
    with pytest.raises(FormatOptionError, match=r"no message type 'shop\.Nope'"):
        codec(message_class_name="shop.Nope")
    not_a_set = tmp_path / "order.proto"
    not_a_set.write_text('syntax = "proto3";')
    with pytest.raises(FormatOptionError, match="is not a compiled descriptor set"):
        codec(descriptor_file=str(not_a_set))


def test_a_generated_python_module_defines_the_message_type():
    fmt = make_codec(
        "protobuf", "value.format",
        {"message-class-name": "google.protobuf.Timestamp", "python-module": "google.protobuf.timestamp_pb2"}, CONTEXT,
    )  # fmt: skip
    assert fmt.inferred_schema() == pa.schema([("seconds", pa.int64()), ("nanos", pa.int32())])
    payload = timestamp_pb2.Timestamp(seconds=-3, nanos=7).SerializeToString()
    assert fmt.decoder(fmt.inferred_schema()).decode([payload]).batch.to_pylist() == [{"seconds": -3, "nanos": 7}]


@pytest.mark.parametrize("in_a_worker", [True, False], ids=["spark-worker", "elsewhere"])
def test_a_generated_module_shipped_as_a_zip_imports_in_a_spark_worker(tmp_path, monkeypatch, in_a_worker):
    """What the source's planning process and its tasks meet when addPyFile shipped a zip after the source was
    registered: the zip is in SparkFiles' folder but not on sys.path (formats/user_modules.py). Outside a Spark
    worker, nothing is looked for, and the error says where the module must be importable."""
    from pyspark import SparkFiles

    from integration.protobuf_golden import protoc

    name = f"shipped{uuid.uuid4().hex[:8]}"
    (tmp_path / "proto" / name).mkdir(parents=True)
    (tmp_path / "proto" / name / "ping.proto").write_text(f'syntax = "proto3";\npackage {name};\nmessage Ping {{}}\n')
    (tmp_path / "generated").mkdir()
    protoc(
        tmp_path / "proto", [tmp_path / "proto" / name / "ping.proto"], tmp_path / "ping.desc", tmp_path / "generated"
    )
    root = tmp_path / "spark-files"
    root.mkdir()
    shutil.make_archive(str(root / name), "zip", tmp_path / "generated")
    (root / "kafka-clients.jar").write_bytes(b"PK")  # an executor's folder holds jars too: never put on sys.path
    monkeypatch.setattr(SparkFiles, "_root_directory", str(root))
    monkeypatch.setattr(SparkFiles, "_is_running_on_worker", in_a_worker)
    monkeypatch.setattr(sys, "path", list(sys.path))
    given = {"message-class-name": f"{name}.Ping", "python-module": f"{name}.ping_pb2"}

    if not in_a_worker:
        with pytest.raises(FormatOptionError, match="importable on the driver, in the data source's planning process"):
            make_codec("protobuf", "value.format", given, CONTEXT)
        return
    fmt = make_codec("protobuf", "value.format", given, CONTEXT)
    assert fmt.message.descriptor.full_name == f"{name}.Ping"
    assert str(root / f"{name}.zip") in sys.path and str(root / "kafka-clients.jar") not in sys.path


def test_rows_written_read_back_the_same_through_every_type_of_field():
    schema = codec().inferred_schema()
    at = dt.datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=dt.timezone.utc)
    row = {
        "id": -4, "name": "n", "big": -(2**63), "huge": 2**63 - 1, "small_u": 2**32 - 1, "price": 0.1, "ratio": 0.5,
        "paid": True, "blob": b"\x00", "kind": "GAME", "tags": ["x"], "attrs": [("a", 1)],
        "total": {"currency": "C", "units": 2}, "lines": [{"sku": "s", "qty": 1}], "at": at, "maybe": 0,
        "card": None, "voucher": 6,
    }  # fmt: skip
    batch = pa.RecordBatch.from_pylist([row], schema=schema)
    fmt = codec()
    assert fmt.decoder(schema).decode(fmt.encoder(schema).encode(batch)).batch.equals(batch)


def test_confluent_message_indexes_are_written_and_read_as_confluent_spells_them():
    pool = order_class().DESCRIPTOR.file.pool
    assert message_indexes(pool.FindMessageTypeByName("shop.Order")) == b"\x00"
    assert message_indexes(pool.FindMessageTypeByName("shop.Refund")) == b"\x02\x02"
    assert message_indexes(pool.FindMessageTypeByName("shop.Order.Line")) == b"\x04\x00\x00"
    assert split_record(b"\x00\x00\x00\x00\x07\x04\x00\x00\x08\x01") == (7, (0, 0), 8)
    with pytest.raises(ValueError, match="not in the Confluent wire format"):
        split_record(b"\x01\x00\x00\x00\x07\x00")
    with pytest.raises(ValueError, match="its message indexes cannot be read"):
        split_record(b"\x00\x00\x00\x00\x07\x04\x00")


def test_columns_no_derived_message_holds_are_refused_naming_the_column_and_the_option():
    confluent = make_codec("protobuf-confluent", "value.format", {"url": "http://127.0.0.1:9"}, CONTEXT)
    option = "'value.protobuf-confluent.message-class-name'"
    refused = {
        "price": (pa.decimal128(9, 2), "for the column type decimal128"),
        "grid": (
            pa.list_(pa.list_(pa.int32())),
            "a list or map inside a list or map: wrap the inner value in a STRUCT",
        ),
        "by_ratio": (pa.map_(pa.float64(), pa.int32()), "a map key of type double: cast the keys to STRING"),
        "a b": (pa.int32(), "its name"),
    }
    for column, (t, why) in refused.items():
        with pytest.raises(FormatOptionError, match=f"column '{column}'") as err:
            confluent.encoder(pa.schema([("id", pa.int32()), (column, t)]))
        assert why in str(err.value) and option in str(err.value)


def test_a_derived_message_reads_back_every_column_it_was_derived_from():
    """The derived type, read by the protobuf format's own mapping: each column comes back as the same type, a
    nullable scalar is `optional` (absent when null), a non-null one is not."""
    columns = pa.schema(
        [pa.field("id", pa.int64(), nullable=False), ("name", pa.string()), ("at", pa.timestamp("us", tz="UTC")),
         ("tags", pa.list_(pa.string())), ("attrs", pa.map_(pa.int32(), pa.struct([("x", pa.float64())]))),
         ("total", pa.struct([("units", pa.int64())]))]
    )  # fmt: skip
    row = message_class(derived_message(columns, "option"))
    assert arrow_schema(row.DESCRIPTOR).types == columns.types
    assert not row.DESCRIPTOR.fields_by_name["id"].has_presence
    assert row.DESCRIPTOR.fields_by_name["name"].has_presence
    assert not row(id=1).HasField("name")


class _TwoIdsRegistry:
    """A registry answering shop/order.proto (and its reference) for every schema id: a stand-in for the unit test
    of the decoder's ordering below (pure logic; the registry itself is tested in test_format_protobuf.py)."""

    def schema_text(self, schema_id: int, kind: str, fmt: str | None = None) -> tuple[str, dict[str, str]]:
        with open(DESCRIPTOR_FILE, "rb") as f:
            files = {p.name: p for p in descriptor_pb2.FileDescriptorSet.FromString(f.read()).file}
        text = {name: base64.b64encode(files[name].SerializeToString()).decode() for name in files}
        return text["shop/order.proto"], {"shop/common.proto": text["shop/common.proto"]}


def test_confluent_records_of_several_schema_ids_read_back_in_payload_order_with_their_failures():
    def record(schema_id: int, **fields) -> bytes:
        return b"\x00" + schema_id.to_bytes(4, "big") + b"\x00" + Order(**fields).SerializeToString()

    payloads = [
        record(7, id=1), record(8, id=2), b"\x01not framed", record(7, id=3, huge=2**64 - 1), record(8, id=4),
        record(7, id=5),
    ]  # fmt: skip
    schema = pa.schema([("id", pa.int32()), ("huge", pa.int64())])
    decoded = ProtobufConfluentDecoder(_TwoIdsRegistry(), schema, read_defaults=False).decode(payloads)
    assert decoded.batch.column("id").to_pylist() == [1, 2, 4, 5]
    assert [i for i, _ in decoded.failures] == [2, 3]
    assert "does not fit the column's 64-bit integer" in decoded.failures[1][1]
