"""The generated bad-input suite, column types: every Spark type in key and value position for every
built-in format (a changelog format: value only), for reads, streaming reads and writes. A type the format declares
is accepted and survives its codec; any other is one SchemaError naming the column, the format option and the types
the format holds, raised on the driver before any Kafka call or task. Pure logic: no broker, no Spark. The rest of
the schema cases: test_bad_schemas.py.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import DataType, IntegerType, StringType, StructType
from pyspark_upsert_kafka import SchemaError
from pyspark_upsert_kafka.formats import ChangelogCodec, CodecContext, codec_class, make_codec

from tests.support.bad_inputs import (
    BASE,
    CHANGELOG_FORMATS,
    CONTEXTS,
    FORMATS,
    MESSAGE_FORMATS,
    REGISTRY_FORMATS,
    WRITE,
    ddl_type,
    format_options,
    plan,
    rejected,
    struct,
)

AT = dt.datetime(2024, 5, 6, 7, 8, 9, 123456)
# The types every format but raw holds, by their DDL names (as Spark spells them: see
# test_every_label_names_its_type_as_spark_does), with a value each for the round trip through the codec.
HELD: dict[str, object] = {
    "BOOLEAN": True,
    "TINYINT": -5,
    "SMALLINT": 300,
    "INT": -70000,
    "BIGINT": 2**40,
    "FLOAT": 0.5,
    "DOUBLE": 1e-300,
    "DECIMAL(10,2)": Decimal("12.34"),
    "STRING": 'h\u00e9 "x" y',
    "STRING COLLATE UTF8_LCASE": "Case",
    "BINARY": b"\x00\xff",
    "DATE": dt.date(1999, 12, 31),
    "TIMESTAMP": AT.replace(tzinfo=dt.timezone.utc),
    "TIMESTAMP_NTZ": AT,
    # Whole seconds: the json formats write a TIME as Flink's json does, in whole seconds (a fraction is refused).
    "TIME(6)": dt.time(7, 8, 9),
    "STRUCT<a:TIME(3)>": {"a": dt.time(23, 59, 59)},
    "ARRAY<INT>": [1, None, 3],
    "ARRAY<ARRAY<STRING>>": [["a"], None],
    "MAP<STRING,DOUBLE>": [("a", 1.0), ("b", None)],
    "STRUCT<a:STRING,b:ARRAY<BIGINT>>": {"a": "x", "b": [1, 2]},
    "ARRAY<STRUCT<x:DATE>>": [{"x": dt.date(2024, 1, 2)}],
}
RAW_HOLDS = {"BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "BINARY", "STRING"}
RAW_HOLDS |= {"STRING COLLATE UTF8_LCASE"}
# Types no format holds, by their DDL names: what the error says instead of the format's types, when Spark has
# no Arrow form for it (None: the format's types).
NOT_HELD: dict[str, str | None] = {
    "VOID": None,
    "INTERVAL DAY TO SECOND": None,
    "INTERVAL DAY": None,
    "VARIANT": None,
    "MAP<INT,STRING>": None,
    "MAP<DATE,STRING>": None,
    "ARRAY<INTERVAL DAY>": None,
    "MAP<STRING,VOID>": None,
    "INTERVAL YEAR TO MONTH": "no Arrow form",
    "INTERVAL": "no Arrow form",
    "CHAR(3)": "declare it as STRING",
    "VARCHAR(3)": "declare it as STRING",
}


@pytest.mark.parametrize("label", [*HELD, *NOT_HELD])
def test_every_label_names_its_type_as_spark_does(label):
    """The labels stand for the types they name: pyspark's own name of the type read from the label."""
    assert ddl_type(label).simpleString().upper() == label.upper()


def _holds(fmt: str, label: str) -> bool:
    return label in HELD and (fmt != "raw" or label in RAW_HOLDS)


def _roles(fmt: str) -> tuple[str, ...]:
    return ("value",) if fmt in CHANGELOG_FORMATS else ("key", "value")


def _typed_schema(context: str, role: str, t: DataType) -> tuple[StructType, dict[str, str]]:
    """A schema with one column `c` of type t in the key or value, and the options that put it there."""
    if role == "key":
        fields = [("c", t), ("name", StringType())]
        more = {"key.fields": "c"}
    else:
        fields = [("id", IntegerType()), ("c", t)]
        more = {}
    if context != WRITE:
        fields.append(("_change_type", StringType()))
    return struct(*fields), more


def _type_cases() -> list:
    cases = []
    for fmt in (f for f in FORMATS if f not in MESSAGE_FORMATS):
        for label in [*HELD, *NOT_HELD]:
            for role in _roles(fmt):
                for context in CONTEXTS:
                    cases.append(pytest.param(fmt, label, role, context, id=f"{context}-{role}-{fmt}-{label}"))
    return cases


@pytest.mark.parametrize(("fmt", "label", "role", "context"), _type_cases())
def test_every_type_in_key_and_value_is_held_or_one_schema_error(fmt, label, role, context):
    schema, more = _typed_schema(context, role, ddl_type(label))
    options = BASE | more | format_options(fmt, role)
    if _holds(fmt, label):
        plan(context, options, schema)
        return
    message = rejected(context, options, schema, SchemaError, ("c",))
    instead = NOT_HELD.get(label)
    if instead is None:  # the format's own list of the types it holds, and the option choosing it
        types = codec_class(fmt, f"{role}.format").column_types
        assert types.describe() in message and f"'{role}.format'" in message, message
    else:
        assert instead in message, message


@pytest.mark.parametrize(
    ("fmt", "label"),
    [
        (f, label)
        for f in FORMATS
        if f not in (*REGISTRY_FORMATS, *MESSAGE_FORMATS)
        for label in HELD
        if _holds(f, label)
    ],
)  # the registry formats share avro's / json's / protobuf's declarations and need a registry
def test_a_type_the_format_declares_is_written_and_read_back_by_it(fmt, label):
    """The declarations are true: each type a format says it holds survives its codec, null included."""
    t, value = ddl_type(label), HELD[label]
    schema = pa.schema([pa.field("c", to_arrow_type(t, timezone="UTC"))])
    codec = make_codec(fmt, "value.format", {}, CodecContext(role="value"))
    rows = [value] if fmt == "raw" else [value, None]  # a raw null is a tombstone, not a value
    batch = pa.RecordBatch.from_arrays([pa.array(rows, schema.field(0).type)], schema=schema)
    payloads = codec.encoder(schema).encode(batch)
    if isinstance(codec, ChangelogCodec):  # envelopes of inserts, read back as the rows they carry
        decoded = codec.changelog_decoder(schema).decode_changes(payloads)
        assert decoded.kinds.to_pylist() == ["insert"] * len(rows)
    else:
        decoded = codec.decoder(schema).decode(payloads)
    assert decoded.failures == ()
    assert decoded.batch.column(0).to_pylist() == batch.column(0).to_pylist()
