"""The generated bad-input suite, schemas (issue 19): every Spark type in key and value position for every
format, duplicate names, reserved columns of other types, missing key and reserved columns; for reads,
streaming reads and writes. Each mistake must be one error of the connector's own type naming the column or
option, raised on the driver before any Kafka call or task. Most cases build the spec as pure logic; the last
group goes through spark.read / readStream / write / writeStream with a broker address nothing listens on, so
a case that got past validation would fail on the connection instead. Options: test_bad_options.py.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    CalendarIntervalType,
    CharType,
    DataType,
    DateType,
    DayTimeIntervalType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
    TimeType,
    VarcharType,
    VariantType,
    YearMonthIntervalType,
)
from pyspark_upsert_kafka import OptionError, SchemaError
from pyspark_upsert_kafka.formats import CodecContext, codec_class, make_codec
from pyspark_upsert_kafka.options.columns import METADATA_TYPES

from tests.support.bad_inputs import (
    BASE,
    CONTEXTS,
    DATA,
    READ,
    READ_STREAM,
    WRITE,
    format_options,
    plan,
    rejected,
    struct,
)

# =============================================================================================================
# Schemas: every Spark type in key and value position, for every format

AT = dt.datetime(2024, 5, 6, 7, 8, 9, 123456)
# The types every format but raw holds, with a value each (for the round trip through the codec).
HELD: dict[str, tuple[DataType, object]] = {
    "BOOLEAN": (BooleanType(), True),
    "TINYINT": (ByteType(), -5),
    "SMALLINT": (ShortType(), 300),
    "INT": (IntegerType(), -70000),
    "BIGINT": (LongType(), 2**40),
    "FLOAT": (FloatType(), 0.5),
    "DOUBLE": (DoubleType(), 1e-300),
    "DECIMAL(10,2)": (DecimalType(10, 2), Decimal("12.34")),
    "STRING": (StringType(), 'h\u00e9 "x" y'),
    "STRING COLLATE UTF8_LCASE": (StringType("UTF8_LCASE"), "Case"),
    "BINARY": (BinaryType(), b"\x00\xff"),
    "DATE": (DateType(), dt.date(1999, 12, 31)),
    "TIMESTAMP": (TimestampType(), AT.replace(tzinfo=dt.timezone.utc)),
    "TIMESTAMP_NTZ": (TimestampNTZType(), AT),
    "ARRAY<INT>": (ArrayType(IntegerType()), [1, None, 3]),
    "ARRAY<ARRAY<STRING>>": (ArrayType(ArrayType(StringType())), [["a"], None]),
    "MAP<STRING,DOUBLE>": (MapType(StringType(), DoubleType()), [("a", 1.0), ("b", None)]),
    "STRUCT<a:STRING,b:ARRAY<BIGINT>>": (
        struct(("a", StringType()), ("b", ArrayType(LongType()))),
        {"a": "x", "b": [1, 2]},
    ),
    "ARRAY<STRUCT<x:DATE>>": (ArrayType(struct(("x", DateType()))), [{"x": dt.date(2024, 1, 2)}]),
}
RAW_HOLDS = {"BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "BINARY", "STRING"}
RAW_HOLDS |= {"STRING COLLATE UTF8_LCASE"}
# Types no format holds: (type, what the error says instead of the format's types, when Spark has no Arrow
# form for it).
NOT_HELD: dict[str, tuple[DataType, str | None]] = {
    "VOID": (NullType(), None),
    "INTERVAL DAY TO SECOND": (DayTimeIntervalType(), None),
    "INTERVAL DAY": (DayTimeIntervalType(0, 0), None),
    "TIME": (TimeType(), None),
    "VARIANT": (VariantType(), None),
    "MAP<INT,STRING>": (MapType(IntegerType(), StringType()), None),
    "MAP<DATE,STRING>": (MapType(DateType(), StringType()), None),
    "ARRAY<INTERVAL DAY>": (ArrayType(DayTimeIntervalType(0, 0)), None),
    "STRUCT<a:TIME>": (struct(("a", TimeType())), None),
    "MAP<STRING,VOID>": (MapType(StringType(), NullType()), None),
    "INTERVAL YEAR TO MONTH": (YearMonthIntervalType(), "no Arrow form"),
    "INTERVAL": (CalendarIntervalType(), "no Arrow form"),
    "CHAR(3)": (CharType(3), "declare it as STRING"),
    "VARCHAR(3)": (VarcharType(3), "declare it as STRING"),
}
FORMATS = ("json", "csv", "avro", "avro-confluent", "raw")


def _holds(fmt: str, label: str) -> bool:
    return label in HELD and (fmt != "raw" or label in RAW_HOLDS)


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
    for fmt in FORMATS:
        for label in [*HELD, *NOT_HELD]:
            for role in ("key", "value"):
                for context in CONTEXTS:
                    cases.append(pytest.param(fmt, label, role, context, id=f"{context}-{role}-{fmt}-{label}"))
    return cases


@pytest.mark.parametrize(("fmt", "label", "role", "context"), _type_cases())
def test_every_type_in_key_and_value_is_held_or_one_schema_error(fmt, label, role, context):
    t = HELD[label][0] if label in HELD else NOT_HELD[label][0]
    schema, more = _typed_schema(context, role, t)
    options = BASE | more | format_options(fmt, role)
    if _holds(fmt, label):
        plan(context, options, schema)
        return
    message = rejected(context, options, schema, SchemaError, ("c",))
    instead = NOT_HELD.get(label, (None, None))[1]
    if instead is None:  # the format's own list of the types it holds, and the option choosing it
        types = codec_class(fmt, f"{role}.format").column_types
        assert types.describe() in message and f"'{role}.format'" in message, message
    else:
        assert instead in message, message


@pytest.mark.parametrize(
    ("fmt", "label"),
    [(fmt, label) for fmt in FORMATS if fmt != "avro-confluent" for label in HELD if _holds(fmt, label)],
)  # avro-confluent shares avro's declaration and needs a registry
def test_a_type_the_format_declares_is_written_and_read_back_by_it(fmt, label):
    """The declarations are true: each type a format says it holds survives its codec, null included."""
    t, value = HELD[label]
    schema = pa.schema([pa.field("c", to_arrow_type(t, timezone="UTC"))])
    codec = make_codec(fmt, "value.format", {}, CodecContext(role="value"))
    rows = [value] if fmt == "raw" else [value, None]  # a raw null is a tombstone, not a value
    batch = pa.RecordBatch.from_arrays([pa.array(rows, schema.field(0).type)], schema=schema)
    decoded = codec.decoder(schema).decode(codec.encoder(schema).encode(batch))
    assert decoded.failures == ()
    assert decoded.batch.column(0).to_pylist() == batch.column(0).to_pylist()


# =============================================================================================================
# Schemas: duplicates, reserved columns, missing columns

DUPLICATES: dict[str, StructType] = {
    "same-name": struct(("id", IntegerType()), ("id", StringType()), ("name", StringType())),
    "other-case": struct(("id", IntegerType()), ("name", StringType()), ("NAME", StringType())),
    "struct-field": struct(("id", IntegerType()), ("s", struct(("a", IntegerType()), ("A", StringType())))),
    "struct-field-in-array": struct(
        ("id", IntegerType()), ("s", ArrayType(struct(("x", IntegerType()), ("x", LongType()))))
    ),
    "struct-field-in-map": struct(
        ("id", IntegerType()), ("s", MapType(StringType(), struct(("x", IntegerType()), ("X", LongType()))))
    ),
    "change-column": struct(("id", IntegerType()), ("_change_type", StringType()), ("_CHANGE_TYPE", StringType())),
}
DUPLICATE_NAMES = {"same-name": "id", "other-case": "NAME", "change-column": "_CHANGE_TYPE"}


@pytest.mark.parametrize("context", CONTEXTS)
@pytest.mark.parametrize("label", list(DUPLICATES))
def test_a_name_twice_is_one_schema_error_naming_it(context, label):
    schema = DUPLICATES[label]
    if context != WRITE and "_change_type" not in schema.names:
        schema = StructType([*schema.fields, StructField("_change_type", StringType())])
    message = rejected(context, BASE, schema, SchemaError, (DUPLICATE_NAMES.get(label, "s"),))
    assert "twice" in message


@pytest.mark.parametrize("context", CONTEXTS)
def test_a_data_column_named_like_a_metadata_column_is_one_schema_error(context):
    schema = struct(
        ("id", IntegerType()), ("offset", LongType()), ("offset", LongType()), ("_change_type", StringType())
    )
    message = rejected(context, BASE | {"metadata.columns": "offset"}, schema, SchemaError, ("offset",))
    assert "record_offset=offset" in message


CHANGE_TYPES = {
    "INT": IntegerType(),
    "BIGINT": LongType(),
    "BOOLEAN": BooleanType(),
    "BINARY": BinaryType(),
    "CHAR(6)": CharType(6),
    "ARRAY<STRING>": ArrayType(StringType()),
    "MAP<STRING,STRING>": MapType(StringType(), StringType()),
    "STRUCT<kind:STRING>": struct(("kind", StringType())),
}


@pytest.mark.parametrize("context", CONTEXTS)
@pytest.mark.parametrize("column", ["_change_type", "op"])
@pytest.mark.parametrize("label", list(CHANGE_TYPES))
def test_a_change_column_of_another_type_than_string_is_one_schema_error(context, column, label):
    schema = struct(("id", IntegerType()), ("name", StringType()), (column, CHANGE_TYPES[label]))
    more = {} if column == "_change_type" else {"changelog.column": column}
    message = rejected(context, BASE | more, schema, SchemaError, (column,))
    assert f"must have type STRING, not {label}" in message


def _metadata_cases() -> list:
    others = [StringType(), IntegerType(), LongType(), TimestampNTZType(), MapType(StringType(), StringType())]
    cases = []
    for kind, expected in METADATA_TYPES.items():
        wrong = [t for t in others if t.simpleString() != expected.simpleString()][:3]
        for t in wrong:
            for context in CONTEXTS:
                cases.append(pytest.param(kind, t, context, id=f"{context}-{kind}-as-{t.simpleString()}"))
    return cases


@pytest.mark.parametrize(("kind", "t", "context"), _metadata_cases())
def test_a_metadata_column_of_another_type_is_one_schema_error_naming_the_type(kind, t, context):
    schema = struct(("id", IntegerType()), ("name", StringType()), ("meta", t), ("_change_type", StringType()))
    message = rejected(context, BASE | {"metadata.columns": f"meta={kind}"}, schema, SchemaError, ("meta",))
    assert f"must have type {METADATA_TYPES[kind].simpleString().upper()}" in message


@pytest.mark.parametrize("context", CONTEXTS)
@pytest.mark.parametrize("kind", list(METADATA_TYPES))
def test_a_metadata_column_missing_from_the_schema_says_how_to_add_it(context, kind):
    message = rejected(context, BASE | {"metadata.columns": f"meta={kind}"}, None, SchemaError, ("meta",))
    assert f"`meta` {METADATA_TYPES[kind].simpleString().upper()}" in message


MISSING: dict[str, tuple[dict[str, str], StructType, type, str]] = {
    "key-column": ({"key.fields": "nope"}, DATA, OptionError, "key.fields"),
    "second-key-column": ({"key.fields": "id;nope"}, DATA, OptionError, "key.fields"),
    "no-data-column": ({}, struct(("_change_type", StringType())), OptionError, "key.fields"),
    "raw-key-of-two-columns": ({"key.format": "raw", "key.fields": "id;name"}, DATA, SchemaError, "key.format"),
    "raw-value-without-columns": (
        {"value.format": "raw", "value.fields-include": "EXCEPT_KEY", "key.fields": "id;name"},
        DATA,
        SchemaError,
        "value.format",
    ),
}


@pytest.mark.parametrize("context", CONTEXTS)
@pytest.mark.parametrize("label", list(MISSING))
def test_a_missing_column_is_one_error_naming_the_option(context, label):
    more, schema, error, name = MISSING[label]
    if context != WRITE and "_change_type" not in schema.names:
        schema = StructType([*schema.fields, StructField("_change_type", StringType())])
    rejected(context, BASE | more, schema, error, (name,))


@pytest.mark.parametrize("context", [READ, READ_STREAM])
@pytest.mark.parametrize("column", ["_change_type", "op"])
def test_a_changelog_read_without_the_change_column_says_how_to_add_it(context, column):
    more = {"read.mode": "changelog"} | ({} if column == "_change_type" else {"changelog.column": column})
    message = rejected(context, BASE | more, DATA, SchemaError, (f"{column} STRING",))
    assert "option 'schema'" in message


# =============================================================================================================
# What a user may reasonably list is accepted


@pytest.mark.parametrize("context", [READ, READ_STREAM])
@pytest.mark.parametrize("column", ["_change_type", "_CHANGE_TYPE"])
def test_the_change_column_listed_in_option_schema_is_read_once(context, column):
    spec = plan(context, BASE | {"schema": f"id BIGINT, v STRING, {column} STRING", "read.mode": "changelog"})
    assert spec.layout.schema.names == ["id", "v", column]
    assert (spec.layout.changelog_column, spec.layout.value_fields) == (column, ("id", "v"))


@pytest.mark.parametrize("context", CONTEXTS)
def test_reserved_and_key_columns_match_in_any_case(context):
    schema = struct(
        ("ID", IntegerType()), ("Name", StringType()), ("Offset", LongType()), ("_Change_Type", StringType())
    )
    layout = plan(context, BASE | {"metadata.columns": "offset"}, schema).layout
    assert (layout.key_fields, layout.changelog_column, [m.column for m in layout.metadata]) == (
        ("ID",),
        "_Change_Type",
        ["Offset"],
    )


# =============================================================================================================
# The same mistakes through Spark itself: one error of the connector's type, in the text Spark raises, before
# any task. A broker address nothing listens on: validation must not need Kafka.

# (id, how, options, .schema(...) of a read or the SELECT of a write, error type, fragments of its message)
SPARK_CASES = [
    ("read-change-column-as-int", READ, {"schema": "id INT, _change_type INT"}, None, SchemaError,
     ("column '_change_type'", "not INT")),
    ("read-change-column-listed-then-a-bad-option", READ,
     {"schema": "id BIGINT, v STRING, _change_type STRING", "scan.bounded.mode": "x"}, None, OptionError,
     ("option 'scan.bounded.mode'",)),
    ("read-schema-typo", READ, {"schema": "id INTEGR"}, None, SchemaError, ("option 'schema'", "'INTEGER'")),
    ("read-duplicate-column", READ, {}, "id BIGINT, id STRING, v STRING", SchemaError, ("column 'id'", "twice")),
    ("read-map-with-int-keys", READ, {}, "id INT, m MAP<INT, STRING>", SchemaError,
     ("column 'm'", "MAP (STRING keys)")),
    ("read-startup-mode", READ, {"scan.startup.mode": "earliest"}, "id INT", OptionError,
     ("option 'scan.startup.mode'",)),
    ("read-raw-value-of-two-columns", READ, {"value.format": "raw"}, "id INT, a STRING, b STRING", SchemaError,
     ("option 'value.format'", "exactly one column")),
    ("readStream-metadata-type", READ_STREAM, {"metadata.columns": "offset"},
     "id INT, offset INT, _change_type STRING", SchemaError, ("column 'offset'", "BIGINT")),
    ("readStream-duration", READ_STREAM, {"scan.topic-partition-discovery.interval": "soon"},
     "id INT, _change_type STRING", OptionError, ("option 'scan.topic-partition-discovery.interval'",)),
    ("readStream-key-missing", READ_STREAM, {"key.fields": "nope"}, "id INT, _change_type STRING", OptionError,
     ("option 'key.fields'", "'nope'")),
    ("readStream-table-mode", READ_STREAM, {"read.mode": "table"}, "id INT, _change_type STRING", OptionError,
     ("option 'read.mode'",)),
    ("readStream-change-column-as-int", READ_STREAM, {"schema": "id INT, _change_type INT"}, None, SchemaError,
     ("column '_change_type'", "not INT")),
    ("write-interval", WRITE, {}, "SELECT 7 AS id, INTERVAL '1' DAY AS wait", SchemaError,
     ("column 'wait'", "option 'value.format'")),
    ("write-guarantee", WRITE, {"sink.delivery-guarantee": "twice"}, "SELECT 1 AS id", OptionError,
     ("option 'sink.delivery-guarantee'",)),
    ("write-change-column-as-int", WRITE, {}, "SELECT 1 AS id, 1 AS _change_type", SchemaError,
     ("column '_change_type'", "not INT")),
    ("write-duplicate-column", WRITE, {}, "SELECT 1 AS id, 'a' AS v, 'b' AS V", SchemaError, ("column 'V'", "twice")),
    ("write-servers", WRITE, {"properties.bootstrap.servers": "host:port"}, "SELECT 1 AS id", OptionError,
     ("option 'properties.bootstrap.servers'",)),
    ("writeStream-buffer", "writeStream", {"sink.buffer-flush.max-rows": "-1", "sink.buffer-flush.interval": "1 s"},
     "CAST(value AS INT) AS id", OptionError, ("option 'sink.buffer-flush.max-rows'",)),
    ("writeStream-interval", "writeStream", {}, "CAST(value AS INT) AS id, INTERVAL '1' DAY AS wait", SchemaError,
     ("column 'wait'", "INTERVAL DAY")),
    ("writeStream-metadata-type", "writeStream", {"metadata.columns": "timestamp"},
     "CAST(value AS INT) AS id, CAST(value AS STRING) AS timestamp", SchemaError,
     ("column 'timestamp'", "TIMESTAMP")),
]  # fmt: skip


def _through_spark(spark, how: str, options: dict, schema: str | None, checkpoint: str) -> None:
    if how in (READ, READ_STREAM):
        reader = (spark.read if how == READ else spark.readStream).format("upsert-kafka").options(**options)
        df = (reader if schema is None else reader.schema(schema)).load()
        if how == READ:
            df.collect()
            return
        writer = df.writeStream.format("noop")
    elif how == WRITE:
        spark.sql(schema).write.format("upsert-kafka").options(**options).mode("append").save()
        return
    else:
        rate = spark.readStream.format("rate").option("rowsPerSecond", 1).load().selectExpr(*schema.split(", "))
        writer = rate.writeStream.format("upsert-kafka").options(**options)
    query = writer.option("checkpointLocation", checkpoint).start()
    try:
        query.awaitTermination(60)  # raises the query's failure
    finally:
        query.stop()


@pytest.mark.parametrize(("how", "more", "schema", "error", "fragments"), [c[1:] for c in SPARK_CASES],
                         ids=[c[0] for c in SPARK_CASES])  # fmt: skip
def test_through_spark_the_user_gets_the_connectors_error(spark, tmp_path, how, more, schema, error, fragments):
    with pytest.raises(Exception) as caught:
        _through_spark(spark, how, BASE | more, schema, str(tmp_path))
    text = str(caught.value)
    assert f"{error.__name__}: " in text, text
    assert all(f in text for f in fragments), text
    # Spark's mark of an error raised by the data source on the driver, not by a task ([PYTHON_EXCEPTION]).
    assert "[PYTHON_DATA_SOURCE_ERROR]" in text and "[PYTHON_EXCEPTION]" not in text, text
    for raw in ("KeyError", "ArrowInvalid", "ArrowNotImplementedError", "IllegalArgumentException", "Py4JJavaError"):
        assert raw not in text, text


VALID_DDL = [
    "id INT",
    "id INT, name STRING",
    "`a b` DECIMAL(5,2) NOT NULL COMMENT 'x, y', `c``d` BIGINT",
    "a: TINYINT, b: SMALLINT, c: LONG, d: REAL, e: DOUBLE, f: BOOLEAN, g: BINARY, h: DATE",
    "t TIMESTAMP, n TIMESTAMP_NTZ, l TIMESTAMP_LTZ, v VOID, x VARIANT, d DEC, n2 NUMERIC(7)",
    "s STRUCT<a: INT, `b c`: ARRAY<MAP<STRING, TIMESTAMP_NTZ>>>, e STRUCT<>",
    "i INTERVAL DAY TO SECOND, j INTERVAL YEAR, k INTERVAL HOUR TO MINUTE, m INTERVAL MONTH, c INTERVAL",
    "c CHAR(3), v VARCHAR(10), s STRING COLLATE UTF8_LCASE, t TIME(3)",
    '  id   int  ,name string not null comment "it\'s"  ',
    "1st INT, _x STRING",
]


@pytest.mark.parametrize("ddl", VALID_DDL)
def test_the_schema_option_reads_ddl_as_sparks_own_parser_does(spark, ddl):
    from pyspark.sql.types import DataType as SparkType
    from pyspark_upsert_kafka.options.ddl import parse_ddl

    assert parse_ddl(ddl) == SparkType.fromDDL(ddl)
