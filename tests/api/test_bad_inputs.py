"""The generated bad-input suite (issue 19): every mistake in options or schema is one error of the connector's
own type, naming the option or the column, raised on the driver before any Kafka call or task.

Cases are built systematically, not by hand: for every option of the catalog, values of the wrong type, out
of range, empty and malformed (by the option's kind); for every format option of the built-in formats, the
same; for schemas, every Spark type in key and value position for every format, duplicate names, reserved
columns of other types, missing key and reserved columns; for reads (batch and streaming) and writes. Most
cases call what Spark calls on the driver (DataSource.schema(), then the read or write spec) as pure logic,
without a broker; the last group goes through spark.read / readStream / write / writeStream with a broker
address nothing listens on, so a case that got past validation would fail on the connection instead. The
session's summary line says how many cases ran (tests/api/conftest.py). Deterministic: no random input.
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
from pyspark_upsert_kafka import OptionError, SchemaError, UpsertKafkaError
from pyspark_upsert_kafka.formats import CodecContext, codec_class, make_codec
from pyspark_upsert_kafka.options.catalog import OPTIONS
from pyspark_upsert_kafka.options.columns import METADATA_TYPES
from pyspark_upsert_kafka.options.layout import check_codecs, table_schema
from pyspark_upsert_kafka.read.spec import parse_read_spec
from pyspark_upsert_kafka.write.spec import parse_write_spec

NOWHERE = "127.0.0.1:9"  # nothing listens: a case that got past validation fails on the connection, never hangs
BASE = {"topic": "t", "properties.bootstrap.servers": NOWHERE, "key.fields": "id", "client.timeout": "2 s"}
READ, READ_STREAM, WRITE = "read", "readStream", "write"
CONTEXTS = (READ, READ_STREAM, WRITE)
REGISTRY = "http://127.0.0.1:9"  # never asked while validating


def struct(*fields: tuple[str, DataType]) -> StructType:
    return StructType([StructField(name, t) for name, t in fields])


DATA = struct(("id", IntegerType()), ("name", StringType()))
CHANGES = struct(("id", IntegerType()), ("name", StringType()), ("_change_type", StringType()))


def plan(context: str, options: dict[str, str], schema: StructType | None = None) -> object:
    """What Spark asks of the connector on the driver: the read schema (DataSource.schema(), when the read
    has no .schema(...)), then the read or write spec; a write builds its encoders too (unless that asks a
    schema registry)."""
    if context == WRITE:
        spec = parse_write_spec(options, DATA if schema is None else schema)
        if "avro-confluent" not in (options.get("key.format"), options.get("value.format")):
            check_codecs(spec.layout, writing=True)
        return spec
    if schema is None:
        schema = table_schema(options) if "schema" in options else CHANGES
    return parse_read_spec(options, schema, streaming=context == READ_STREAM)


def rejected(
    context: str, options: dict, schema: StructType | None, error: type, names: tuple[str, ...], quoted: bool = True
) -> str:
    """The one error of exactly the expected connector type, naming one of `names` (quoted, as messages do; a
    codec lists unknown format options unquoted)."""
    with pytest.raises(UpsertKafkaError) as caught:
        plan(context, options, schema)
    message = str(caught.value)
    assert type(caught.value) is error, f"{type(caught.value).__name__}, not {error.__name__}: {message}"
    assert any((f"'{n}'" if quoted else n) in message for n in names), f"none of {names} named in: {message}"
    return message


@pytest.mark.parametrize("context", CONTEXTS)
def test_the_base_options_are_valid_so_each_case_fails_for_its_own_mistake(context):
    plan(context, BASE)


# =============================================================================================================
# Options of the catalog, by kind


KIND_VALUES: dict[str, list[str]] = {
    "flag": ["", "yes", "1", "maybe", "true false"],
    "duration": ["", "soon", "-1 s", "0", "1 fortnight", "s", "1.5.2 s"],
    "positive-int": ["", "0", "-1", "1.5", "many", "1e3", " "],
    "epoch-ms": ["", "yesterday", "-5", "1.5", "1e12"],
    "flink-offsets": [
        "",
        "0:42",
        "partition:0,offset:-1",
        "partition:x,offset:1",
        "partition:0;offset:1",
        "partition:0,offset:1;partition:0,offset:2",
    ],
    "spark-offsets": [
        "",
        "{not json",
        '{"t": 5}',
        '{"t": {"x": 1}}',
        '{"t": {"0": -3}}',
        '{"t": {"0": 1.5}}',
        '{"t": {"0": true}}',
        "[1, 2]",
        '"earliest"',
        '{"other": {"0": 1}}',
        "earliests",
    ],
}

# Every option of the catalog, by the kind of value it takes; an option added to the catalog must be added here
# (test_every_catalog_option_has_bad_values), so that the suite grows with the catalog.
OPTION_KINDS: dict[str, str] = {
    "topic": "topic",
    "properties.bootstrap.servers": "servers",
    "key.fields": "key-fields",
    "key.fields-prefix": "prefix",
    "value.fields-include": "include",
    "metadata.columns": "metadata",
    "key.format": "key-format",
    "value.format": "value-format",
    "schema": "ddl",
    "changelog.column": "changelog-column",
    "client.timeout": "duration",
    "properties.*": "properties",
    "topic-pattern": "topic-pattern",
    "read.mode": "read-mode",
    "changelog.compact": "flag",
    "scan.startup.mode": "startup-mode",
    "scan.startup.timestamp-millis": "epoch-ms",
    "scan.startup.specific-offsets": "flink-offsets",
    "startingOffsets": "spark-offsets",
    "startingTimestamp": "epoch-ms",
    "scan.bounded.mode": "bounded-mode",
    "scan.bounded.timestamp-millis": "epoch-ms",
    "scan.bounded.specific-offsets": "flink-offsets",
    "endingOffsets": "spark-offsets",
    "endingTimestamp": "epoch-ms",
    "scan.max-records-per-batch": "positive-int",
    "scan.split.max-records": "positive-int",
    "minPartitions": "positive-int",
    "scan.fail-on-data-loss": "flag",
    "scan.topic-partition-discovery.interval": "duration",
    "scan.watermark.idle-timeout": "duration",
    "scan.watermark.alignment.max-drift": "duration",
    "sink.partitioner": "partitioner",
    "sink.buffer-flush.max-rows": "buffer-rows",
    "sink.buffer-flush.interval": "buffer-interval",
    "sink.delivery-guarantee": "guarantee",
    "sink.transactional-id-prefix": "transactional-id-prefix",
    "sink.write-id": "write-id",
}

# Options a value needs beside it to be read at all (a timestamp only counts in the timestamp mode, ...).
COMPANIONS: dict[str, dict[str, str]] = {
    "scan.startup.timestamp-millis": {"scan.startup.mode": "timestamp"},
    "scan.bounded.timestamp-millis": {"scan.bounded.mode": "timestamp"},
    "scan.startup.specific-offsets": {"scan.startup.mode": "specific-offsets"},
    "scan.bounded.specific-offsets": {"scan.bounded.mode": "specific-offsets"},
    "scan.split.max-records": {"read.mode": "changelog"},
    "minPartitions": {"read.mode": "changelog"},
    "changelog.compact": {"read.mode": "changelog"},
}

# Kinds whose bad values are particular: (label, options, expected error type, contexts or None for the
# option's own). The label names the mistake in the test id.
OptionCase = tuple[str, dict[str, str], type, tuple[str, ...] | None]
PARTICULAR: dict[str, list[OptionCase]] = {
    "topic": [
        ("empty", {"topic": ""}, OptionError, None),
        ("blank", {"topic": "  "}, OptionError, None),
        ("only-separators", {"topic": ";,;"}, OptionError, None),
        ("space-in-name", {"topic": "my topic"}, OptionError, None),
        ("slash-in-name", {"topic": "a/b"}, OptionError, None),
        ("too-long", {"topic": "t" * 250}, OptionError, None),
        ("dot-dot", {"topic": ".."}, OptionError, None),
        ("with-topic-pattern", {"topic-pattern": "t.*"}, OptionError, None),
    ],
    "servers": [
        ("empty", {"properties.bootstrap.servers": ""}, OptionError, None),
        ("blank", {"properties.bootstrap.servers": " "}, OptionError, None),
        ("empty-entry", {"properties.bootstrap.servers": "a:9092,,b:9092"}, OptionError, None),
        ("no-host", {"properties.bootstrap.servers": ":9092"}, OptionError, None),
        ("empty-port", {"properties.bootstrap.servers": "host:"}, OptionError, None),
        ("port-not-a-number", {"properties.bootstrap.servers": "host:port"}, OptionError, None),
        ("port-zero", {"properties.bootstrap.servers": "host:0"}, OptionError, None),
        ("port-out-of-range", {"properties.bootstrap.servers": "host:70000"}, OptionError, None),
    ],
    "key-fields": [
        ("empty", {"key.fields": ""}, OptionError, None),
        ("blank", {"key.fields": "  "}, OptionError, None),
        ("only-separator", {"key.fields": ";"}, OptionError, None),
        ("empty-entry", {"key.fields": "id;;name"}, OptionError, None),
        ("twice", {"key.fields": "id;ID"}, OptionError, None),
        ("not-a-column", {"key.fields": "nope"}, OptionError, None),
        ("comma-separated", {"key.fields": "id,name"}, OptionError, None),
        ("the-change-column", {"key.fields": "_change_type"}, OptionError, None),
        ("a-metadata-column", {"key.fields": "offset", "metadata.columns": "offset"}, OptionError, None),
    ],
    "prefix": [
        ("without-except-key", {"key.fields-prefix": "k_"}, OptionError, None),
        (
            "key-column-without-it",
            {"key.fields-prefix": "k_", "value.fields-include": "EXCEPT_KEY"},
            OptionError,
            None,
        ),
        ("the-whole-key-name", {"key.fields-prefix": "id", "value.fields-include": "EXCEPT_KEY"}, OptionError, None),
    ],
    "include": [
        (label, {"value.fields-include": value}, OptionError, None)
        for label, value in (("empty", ""), ("unknown", "NONE"), ("dashed", "except-key"), ("both", "ALL,EXCEPT_KEY"))
    ],
    "metadata": [
        ("unknown-kind", {"metadata.columns": "offsets"}, OptionError, None),
        ("empty-kind", {"metadata.columns": "a="}, OptionError, None),
        ("twice", {"metadata.columns": "offset, offset"}, OptionError, None),
        ("twice-other-case", {"metadata.columns": "offset, OFFSET=partition"}, OptionError, None),
        ("two-equals", {"metadata.columns": "a=b=offset"}, OptionError, None),
        ("the-change-column", {"metadata.columns": "_change_type=offset"}, OptionError, None),
        ("missing-from-the-schema", {"metadata.columns": "offset"}, SchemaError, None),
    ],
    **{
        f"{role}-format": [
            (label, {f"{role}.format": value}, OptionError, None)
            for label, value in (
                ("empty", ""),
                ("unknown", "jsn"),
                ("changelog-format", "debezium-json"),
                ("missing-module", "no_such_module_here:Codec"),
                ("missing-class", "json:NoSuchCodec"),
                ("not-a-codec", "builtins:int"),
            )
        ]
        + [(f"raw-{role}-of-two-columns", {f"{role}.format": "raw", "key.fields": "id;name"}, SchemaError, None)]
        for role in ("key", "value")
    },
    "ddl": [
        (label, {"schema": ddl}, SchemaError, (READ, READ_STREAM))
        for label, ddl in (
            ("empty", ""),
            ("blank", "  "),
            ("unknown-type", "id INTEGR"),
            ("trailing-comma", "id INT,"),
            ("no-type", "id"),
            ("stray-parenthesis", "id INT, name STRING)"),
            ("unclosed-array", "id ARRAY<INT"),
            ("decimal-too-wide", "id DECIMAL(40,2)"),
            ("decimal-scale-over-precision", "id DECIMAL(5,6)"),
            ("map-of-one-type", "id MAP<INT>"),
            ("unclosed-backtick", "`id INT"),
            ("semicolons", "id INT; name STRING"),
            ("backwards-interval", "id INTERVAL SECOND TO DAY"),
            ("not-null-without-null", "id INT NOT"),
            ("comment-without-text", "id INT COMMENT"),
            ("change-column-as-int", "id INT, _change_type INT"),
            ("column-twice", "id INT, ID STRING"),
        )
    ]
    + [
        (
            "metadata-column-listed",
            {"schema": "id INT, offset BIGINT", "metadata.columns": "offset"},
            SchemaError,
            None,
        ),
    ],
    "changelog-column": [
        ("empty", {"changelog.column": ""}, OptionError, None),
        ("blank", {"changelog.column": "  "}, OptionError, None),
        ("the-key-column", {"changelog.column": "id"}, OptionError, None),
        ("a-metadata-column", {"changelog.column": "offset", "metadata.columns": "offset"}, OptionError, None),
    ],
    "properties": [
        (f"reserved-{prop}", {f"properties.{prop}": value}, OptionError, contexts)
        for prop, value, contexts in (
            ("enable.auto.commit", "true", None),
            ("enable.auto.offset.store", "true", None),
            ("isolation.level", "read_uncommitted", None),
            ("partitioner", "random", None),
            ("transactional.id", "t", None),
            ("enable.idempotence", "false", (WRITE,)),
            ("acks", "1", (WRITE,)),
            ("delivery.report.only.error", "false", None),
        )
    ]
    + [
        (f"java-only-{prop}", {f"kafka.{prop}": "x"}, OptionError, None)
        for prop in (
            "sasl.jaas.config",
            "ssl.truststore.location",
            "ssl.truststore.password",
            "ssl.keystore.location",
            "key.serializer",
            "value.deserializer",
        )
    ]
    + [
        (f"transaction-timeout-{label}", {"properties.transaction.timeout.ms": v}, OptionError, (WRITE,))
        for label, v in (("empty", ""), ("too-short", "999"), ("not-a-number", "abc"), ("negative", "-1"))
    ]
    + [
        ("auto-offset-reset-unknown", {"properties.auto.offset.reset": "oldest"}, OptionError, (READ, READ_STREAM)),
        (
            "group-offsets-with-empty-group",
            {"scan.startup.mode": "group-offsets", "properties.group.id": ""},
            OptionError,
            (READ, READ_STREAM),
        ),
    ],
    "topic-pattern": [
        (label, {"topic": "", "topic-pattern": value}, OptionError, None)
        for label, value in (("unbalanced-parenthesis", "orders-("), ("open-class", "[a-"), ("nothing-to-repeat", "*"))
    ],
    "read-mode": [
        ("empty", {"read.mode": ""}, OptionError, None),
        ("typo", {"read.mode": "tabel"}, OptionError, None),
        ("streaming", {"read.mode": "streaming"}, OptionError, None),
        ("table-for-a-stream", {"read.mode": "table"}, OptionError, (READ_STREAM,)),
    ],
    "startup-mode": [
        (label, {"scan.startup.mode": value}, OptionError, None)
        for label, value in (("empty", ""), ("spark-word", "earliest"), ("unknown", "beginning"), ("none", "none"))
    ]
    + [
        ("timestamp-without-millis", {"scan.startup.mode": "timestamp"}, OptionError, None),
        ("specific-without-offsets", {"scan.startup.mode": "specific-offsets"}, OptionError, None),
        ("group-without-group-id", {"scan.startup.mode": "group-offsets"}, OptionError, None),
        (
            "with-startingOffsets",
            {"scan.startup.mode": "latest-offset", "startingOffsets": "latest"},
            OptionError,
            None,
        ),
        ("millis-without-mode", {"scan.startup.timestamp-millis": "1700000000000"}, OptionError, None),
        ("offsets-without-mode", {"scan.startup.specific-offsets": "partition:0,offset:1"}, OptionError, None),
    ],
    "bounded-mode": [
        (label, {"scan.bounded.mode": value}, OptionError, None)
        for label, value in (("empty", ""), ("earliest", "earliest-offset"), ("unknown", "end"), ("none", "none"))
    ]
    + [
        ("timestamp-without-millis", {"scan.bounded.mode": "timestamp"}, OptionError, None),
        ("specific-without-offsets", {"scan.bounded.mode": "specific-offsets"}, OptionError, None),
        ("ending-at-earliest", {"endingOffsets": "earliest"}, OptionError, None),
        ("ending-json-at-earliest", {"endingOffsets": '{"t": {"0": -2}}'}, OptionError, None),
        ("millis-without-mode", {"scan.bounded.timestamp-millis": "1700000000000"}, OptionError, None),
        ("with-endingTimestamp", {"scan.bounded.mode": "latest-offset", "endingTimestamp": "1"}, OptionError, None),
    ],
    "partitioner": [
        (label, {"sink.partitioner": value}, OptionError, None)
        for label, value in (
            ("empty", ""),
            ("fixed", "fixed"),
            ("round-robin", "ROUND-ROBIN"),
            ("java-class", "org.apache.kafka.clients.producer.RoundRobinPartitioner"),
            ("missing-module", "no_such_module_here:partition"),
            ("missing-function", "os:no_such_function"),
            ("not-a-function", "os:sep"),
        )
    ],
    "buffer-rows": [
        (label, {"sink.buffer-flush.max-rows": value, "sink.buffer-flush.interval": "1 s"}, OptionError, None)
        for label, value in (("empty", ""), ("negative", "-1"), ("fraction", "1.5"), ("word", "many"), ("zero", "0"))
    ]
    + [("without-interval", {"sink.buffer-flush.max-rows": "10"}, OptionError, None)],
    "buffer-interval": [
        (label, {"sink.buffer-flush.interval": value, "sink.buffer-flush.max-rows": "10"}, OptionError, None)
        for label, value in (
            ("empty", ""),
            ("word", "soon"),
            ("negative", "-1 s"),
            ("unit", "1 fortnight"),
            ("zero", "0"),
        )
    ]
    + [("without-max-rows", {"sink.buffer-flush.interval": "1 s"}, OptionError, None)],
    "guarantee": [
        (label, {"sink.delivery-guarantee": value}, OptionError, None)
        for label, value in (("empty", ""), ("unknown", "twice"), ("at-most-once", "at-most-once"), ("typo", "exactly"))
    ]
    + [("exactly-once-without-prefix", {"sink.delivery-guarantee": "exactly-once"}, OptionError, None)],
    "transactional-id-prefix": [
        (label, {"sink.delivery-guarantee": "exactly-once", "sink.transactional-id-prefix": v}, OptionError, None)
        for label, v in (("empty", ""), ("blank", "  "))
    ],
    "write-id": [
        ("without-exactly-once", {"sink.write-id": "nightly"}, OptionError, None),
    ]
    + [
        (
            label,
            {"sink.delivery-guarantee": "exactly-once", "sink.transactional-id-prefix": "p", "sink.write-id": v},
            OptionError,
            None,
        )
        for label, v in (("empty", ""), ("blank", "  "), ("with-bar", "a|b"))
    ],
}


SCHEMA_COLUMNS = ("_change_type", "ID", "offset")  # the columns the 'schema' cases get wrong


def _contexts(option: str) -> tuple[str, ...]:
    applies = {doc.name: doc.applies for doc in OPTIONS}.get(option, "read/write")
    return {"read": (READ, READ_STREAM), "write": (WRITE,)}.get(applies, CONTEXTS)


def _option_cases() -> list:
    cases = []
    for option, kind in OPTION_KINDS.items():
        doc = next(d for d in OPTIONS if d.name == option)
        if kind in PARTICULAR:
            particular = PARTICULAR[kind]
        else:
            companions = COMPANIONS.get(option, {})
            particular = [(repr(v), {option: v} | companions, OptionError, None) for v in KIND_VALUES[kind]]
        for label, more, error, contexts in particular:
            # The error names the option, one of the options the case sets, or (option 'schema') a column.
            names = (option, *doc.aliases, *(k.replace("kafka.", "properties.") for k in more), *SCHEMA_COLUMNS)
            for context in contexts or _contexts(option):
                cases.append(pytest.param(context, more, error, names, id=f"{context}-{option}-{label}"))
    return cases


# Mistakes of no one option: a path, an unknown option, an alias disagreeing with its Flink twin.
CROSS_CASES = [
    ("path", {"path": "t"}, ("path", "topic")),
    ("unknown-option", {"key.field": "id"}, ("key.field",)),
    ("unknown-spark-option", {"startingOffset": "earliest"}, ("startingOffset",)),
] + [
    (f"alias-{alias}-disagrees", {doc.name: "a", alias: "b"}, (doc.name, alias))
    for doc in OPTIONS
    for alias in doc.aliases
]


@pytest.mark.parametrize(("context", "more", "error", "names"), _option_cases())
def test_bad_option_value_is_one_error_naming_the_option(context, more, error, names):
    rejected(context, BASE | more, None, error, names)


@pytest.mark.parametrize("context", CONTEXTS)
@pytest.mark.parametrize(("label", "more", "names"), CROSS_CASES, ids=[c[0] for c in CROSS_CASES])
def test_unknown_or_conflicting_options_are_one_error_naming_them(context, label, more, names):
    rejected(context, BASE | more, None, OptionError, names)


def test_every_catalog_option_has_bad_values():
    catalog = {doc.name for doc in OPTIONS}
    assert catalog == set(OPTION_KINDS), f"give the bad-input suite values for: {catalog ^ set(OPTION_KINDS)}"


# =============================================================================================================
# Format options of the built-in formats

# Per format option: bad values (label, value). An option not listed takes any text (a name, a literal).
FORMAT_BAD: dict[str, dict[str, list[tuple[str, str]]]] = {
    "json": {
        "fail-on-missing-field": [("word", "maybe")],
        "ignore-parse-errors": [("word", "maybe"), ("number", "1")],
        "timestamp-format.standard": [("unknown", "ISO"), ("empty", "")],
        "map-null-key.mode": [("unknown", "KEEP")],
        "encode.decimal-as-plain-number": [("word", "yes")],
        "encode.ignore-null-fields": [("empty", "")],
    },
    "csv": {
        "field-delimiter": [("empty", ""), ("two-characters", ";;"), ("line-break", "\n")],
        "quote-character": [("two-characters", "''"), ("same-as-delimiter", ",")],
        "disable-quote-character": [("word", "maybe")],
        "allow-comments": [("word", "maybe")],
        "ignore-parse-errors": [("word", "maybe")],
        "array-element-delimiter": [("empty", "")],
        "escape-character": [("two-characters", "ab"), ("same-as-quote", '"')],
    },
    "raw": {
        "charset": [("unknown", "klingon"), ("not-text", "base64"), ("empty", "")],
        "endianness": [("unknown", "middle")],
        "ignore-parse-errors": [("word", "maybe")],
    },
    "avro": {
        "schema": [("not-json", "{not json"), ("not-a-schema", '{"type": "nope"}')],
        "ignore-parse-errors": [("word", "maybe")],
    },
    "avro-confluent": {
        "url": [("empty", ""), ("not-http", "ftp://registry:8081")],
        "auto.register.schemas": [("word", "maybe")],
        "basic-auth.credentials-source": [("unknown", "SASL_INHERIT")],
        "bearer-auth.credentials-source": [("unknown", "OAUTH")],
        "schema": [("not-json", "{not json")],
        "ignore-parse-errors": [("word", "maybe")],
    },
}
FREE_TEXT = {
    "json": {"map-null-key.literal"},
    "csv": {"null-literal"},
    "raw": set(),
    "avro": {"record-name", "record-namespace"},
    "avro-confluent": {
        "subject",
        "record-name",
        "record-namespace",
        "basic-auth.user-info",
        "bearer-auth.token",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.truststore.location",
        "ssl.truststore.password",
    },
}


def _format_options(fmt: str, role: str) -> dict[str, str]:
    other = "value" if role == "key" else "key"
    more = {f"{role}.format": fmt, f"{other}.format": "json"}
    if fmt == "avro-confluent":
        more[f"{role}.avro-confluent.url"] = REGISTRY
    if fmt == "raw":
        more["value.fields-include"] = "EXCEPT_KEY"  # the raw value holds one column
    return more


def _format_cases() -> list:
    cases = []
    for fmt, bad in FORMAT_BAD.items():
        for role in ("key", "value"):
            for option, values in bad.items():
                name = f"{role}.{fmt}.{option}"
                for label, value in values:
                    for context in (READ, WRITE):
                        more = _format_options(fmt, role) | {name: value}
                        cases.append(pytest.param(context, more, name, id=f"{context}-{name}-{label}"))
            unknown = f"{role}.{fmt}.no-such-option"
            for context in (READ, WRITE):
                more = _format_options(fmt, role) | {unknown: "x"}
                cases.append(pytest.param(context, more, unknown, id=f"{context}-{unknown}"))
    return cases


@pytest.mark.parametrize(("context", "more", "name"), _format_cases())
def test_bad_format_option_is_one_error_naming_it(context, more, name):
    schema = struct(("id", IntegerType()), ("name", StringType()), ("_change_type", StringType()))
    rejected(context, BASE | more, schema if context != WRITE else None, OptionError, (name,), quoted=False)


@pytest.mark.parametrize("fmt", sorted(FORMAT_BAD))
def test_every_built_in_format_option_has_bad_values_or_takes_any_text(fmt):
    declared = set(codec_class(fmt, "value.format").option_names)
    assert declared == set(FORMAT_BAD[fmt]) | FREE_TEXT[fmt]


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
    options = BASE | more | _format_options(fmt, role)
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
    "  id   int  ,name string not null comment \"it's\"  ",
    "1st INT, _x STRING",
]


@pytest.mark.parametrize("ddl", VALID_DDL)
def test_the_schema_option_reads_ddl_as_sparks_own_parser_does(spark, ddl):
    from pyspark.sql.types import DataType as SparkType
    from pyspark_upsert_kafka.options.ddl import parse_ddl

    assert parse_ddl(ddl) == SparkType.fromDDL(ddl)
