"""The generated bad-input suite, schemas: duplicate names, reserved columns of other types, missing
key and reserved columns; for reads, streaming reads and writes. Each mistake must be one error of the connector's
own type naming the column or option, raised on the driver before any Kafka call or task. Most cases build the
spec as pure logic; the last group goes through spark.read / readStream / write / writeStream with a broker address
nothing listens on, so a case that got past validation would fail on the connection instead. Every type in every
format: test_bad_types.py; options: test_bad_options.py, test_bad_format_options.py.
"""

from __future__ import annotations

import pytest
from pyspark.sql.pandas.types import from_arrow_type
from pyspark.sql.types import DataType, IntegerType, MapType, StringType, StructField, StructType, TimestampType
from pyspark_upsert_kafka import OptionError, SchemaError
from pyspark_upsert_kafka.formats import codec_class
from pyspark_upsert_kafka.options.columns import METADATA_TYPES, type_text
from pyspark_upsert_kafka.options.ddl import parse_ddl

from tests.support.bad_inputs import (
    BASE,
    CHANGELOG_FORMATS,
    CONTEXTS,
    DATA,
    READ,
    READ_STREAM,
    WRITE,
    ddl_type,
    plan,
    rejected,
    struct,
)

# =============================================================================================================
# Schemas: duplicates, reserved columns, missing columns

DUPLICATES: dict[str, StructType] = {
    label: parse_ddl(ddl)
    for label, ddl in {
        "same-name": "id INT, id STRING, name STRING",
        "other-case": "id INT, name STRING, NAME STRING",
        "struct-field": "id INT, s STRUCT<a: INT, A: STRING>",
        "struct-field-in-array": "id INT, s ARRAY<STRUCT<x: INT, x: BIGINT>>",
        "struct-field-in-map": "id INT, s MAP<STRING, STRUCT<x: INT, X: BIGINT>>",
        "change-column": "id INT, _change_type STRING, _CHANGE_TYPE STRING",
    }.items()
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
    schema = parse_ddl("id INT, offset BIGINT, offset BIGINT, _change_type STRING")
    message = rejected(context, BASE | {"metadata.columns": "offset"}, schema, SchemaError, ("offset",))
    assert "record_offset=offset" in message


CHANGE_TYPES = (
    "INT", "BIGINT", "BOOLEAN", "BINARY", "CHAR(6)", "ARRAY<STRING>", "MAP<STRING,STRING>", "STRUCT<kind:STRING>",
)  # fmt: skip


@pytest.mark.parametrize("context", CONTEXTS)
@pytest.mark.parametrize("column", ["_change_type", "op"])
@pytest.mark.parametrize("label", CHANGE_TYPES)
def test_a_change_column_of_another_type_than_string_is_one_schema_error(context, column, label):
    schema = struct(("id", IntegerType()), ("name", StringType()), (column, ddl_type(label)))
    more = {} if column == "_change_type" else {"changelog.column": column}
    message = rejected(context, BASE | more, schema, SchemaError, (column,))
    assert f"must have type STRING, not {label}" in message


def _metadata_kinds() -> dict[str, tuple[str, str, DataType]]:
    """Every metadata kind, as label -> (value format, kind, type): the record's, with json values, and each
    changelog value format's own (`value.<key>`)."""
    kinds = {kind: ("json", kind, t) for kind, t in METADATA_TYPES.items()}
    for fmt in CHANGELOG_FORMATS:
        readable = codec_class(fmt, "value.format").readable_metadata
        kinds |= {f"{fmt}-value.{k}": (fmt, f"value.{k}", from_arrow_type(t)) for k, t in readable.items()}
    return kinds


METADATA_KINDS = _metadata_kinds()


def _metadata_cases() -> list:
    others = [ddl_type(t) for t in ("STRING", "INT", "BIGINT", "TIMESTAMP_NTZ", "MAP<STRING,STRING>")]
    cases = []
    for label, (_, _, expected) in METADATA_KINDS.items():
        wrong = [t for t in others if t.simpleString() != expected.simpleString()][:3]
        for t in wrong:
            for context in CONTEXTS:
                cases.append(pytest.param(label, t, context, id=f"{context}-{label}-as-{t.simpleString()}"))
    return cases


@pytest.mark.parametrize(("label", "t", "context"), _metadata_cases())
def test_a_metadata_column_of_another_type_is_one_schema_error_naming_the_type(label, t, context):
    fmt, kind, expected = METADATA_KINDS[label]
    schema = struct(("id", IntegerType()), ("name", StringType()), ("meta", t), ("_change_type", StringType()))
    more = {"value.format": fmt, "metadata.columns": f"meta={kind}"}
    message = rejected(context, BASE | more, schema, SchemaError, ("meta",))
    assert f"must have type {type_text(expected)}" in message


@pytest.mark.parametrize("context", CONTEXTS)
@pytest.mark.parametrize("label", list(METADATA_KINDS))
def test_a_metadata_column_missing_from_the_schema_says_how_to_add_it(context, label):
    fmt, kind, expected = METADATA_KINDS[label]
    more = {"value.format": fmt, "metadata.columns": f"meta={kind}"}
    message = rejected(context, BASE | more, None, SchemaError, ("meta",))
    assert f"`meta` {type_text(expected)}" in message


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


@pytest.mark.parametrize("context", [READ, READ_STREAM])
def test_option_schema_adds_a_value_format_metadata_column_with_the_formats_type(context):
    metadata = "at=value.source.timestamp, props=value.source.properties"
    more = {"value.format": "debezium-json", "metadata.columns": metadata}
    spec = plan(context, BASE | more | {"schema": "id INT, name STRING"})
    assert [(f.name, f.dataType) for f in spec.layout.schema.fields[-2:]] == [
        ("at", TimestampType()),
        ("props", MapType(StringType(), StringType())),
    ]
    assert spec.layout.value_fields == ("id", "name")


@pytest.mark.parametrize("context", CONTEXTS)
def test_reserved_and_key_columns_match_in_any_case(context):
    schema = parse_ddl("ID INT, Name STRING, Offset BIGINT, _Change_Type STRING")
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
    ("readStream-value-format-metadata-type", READ_STREAM,
     {"value.format": "canal-json", "metadata.columns": "pks=value.pk-names"},
     "id INT, pks STRING, _change_type STRING", SchemaError, ("column 'pks'", "ARRAY<STRING>")),
    ("read-changelog-format-except-key", READ, {"value.format": "maxwell-json", "value.fields-include": "EXCEPT_KEY"},
     "id INT, name STRING", OptionError, ("option 'value.fields-include'", "maxwell-json")),
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
    assert parse_ddl(ddl) == DataType.fromDDL(ddl)
