"""Shared by the generated bad-input suite (tests/api/test_bad_*.py): what Spark asks of the connector on the
driver, the formats it covers, and the check that a mistake is one error of the expected connector type naming
the option or column."""

from __future__ import annotations

import pytest
from pyspark.sql.types import (
    DataType,
    IntegerType,
    StringType,
    StructField,
    StructType,
)
from pyspark_upsert_kafka import UpsertKafkaError
from pyspark_upsert_kafka.formats import ChangelogCodec, available_formats, codec_class
from pyspark_upsert_kafka.options.ddl import parse_ddl
from pyspark_upsert_kafka.options.layout import check_codecs, table_schema
from pyspark_upsert_kafka.read.spec import parse_read_spec
from pyspark_upsert_kafka.write.spec import parse_write_spec

NOWHERE = "127.0.0.1:9"  # nothing listens: a case that got past validation fails on the connection, never hangs
BASE = {"topic": "t", "properties.bootstrap.servers": NOWHERE, "key.fields": "id", "client.timeout": "2 s"}
READ, READ_STREAM, WRITE = "read", "readStream", "write"
CONTEXTS = (READ, READ_STREAM, WRITE)
REGISTRY = "http://127.0.0.1:9"  # never asked while validating
# Every built-in format, so that a format added is covered; the change-envelope ones are value formats only.
FORMATS = tuple(available_formats())
# The formats that ask a schema registry (their `url` option points at one).
REGISTRY_FORMATS = tuple(
    f for f in FORMATS if "url" in {o.name for o in codec_class(f, "value.format").declared_options}
)
# The formats whose columns are a message type's fields (protobuf): what they hold is decided by the message, not by
# the column's Spark type (their type mapping: tests/formats/test_protobuf_codec.py).
MESSAGE_FORMATS = tuple(
    f for f in FORMATS if "message-class-name" in {o.name for o in codec_class(f, "value.format").declared_options}
)
CHANGELOG_FORMATS = tuple(f for f in FORMATS if issubclass(codec_class(f, "value.format"), ChangelogCodec))

# The built-in formats as written down here, not as the registry lists them: a format dropped from the registry, or
# a group above that lost its members (an option renamed), fails collection instead of shrinking the suite.
_REGISTRY_BUILT_IN = ("avro-confluent", "debezium-avro-confluent", "json-confluent", "protobuf-confluent")
_CHANGELOG_BUILT_IN = ("canal-json", "debezium-avro-confluent", "debezium-json", "maxwell-json", "ogg-json")
_BUILT_IN = {"avro", "csv", "json", "protobuf", "raw", *_REGISTRY_BUILT_IN, *_CHANGELOG_BUILT_IN}
assert not _BUILT_IN - set(FORMATS), f"built-in formats not in the registry: {sorted(_BUILT_IN - set(FORMATS))}"
assert not set(_REGISTRY_BUILT_IN) - set(REGISTRY_FORMATS), REGISTRY_FORMATS
assert not {"protobuf", "protobuf-confluent"} - set(MESSAGE_FORMATS), MESSAGE_FORMATS
assert not set(_CHANGELOG_BUILT_IN) - set(CHANGELOG_FORMATS), CHANGELOG_FORMATS


def struct(*fields: tuple[str, DataType]) -> StructType:
    return StructType([StructField(name, t) for name, t in fields])


def ddl_type(text: str) -> DataType:
    """The type a DDL type name stands for (`MAP<STRING,DOUBLE>`), read by the connector's own DDL parser
    (which test_bad_schemas.py checks against Spark's): the tables of types here are their names only."""
    return parse_ddl(f"c {text}").fields[0].dataType


DATA = struct(("id", IntegerType()), ("name", StringType()))
CHANGES = struct(("id", IntegerType()), ("name", StringType()), ("_change_type", StringType()))


def plan(context: str, options: dict[str, str], schema: StructType | None = None) -> object:
    """What Spark asks of the connector on the driver: the read schema (DataSource.schema(), when the read
    has no .schema(...)), then the read or write spec; a write builds its encoders too (unless that asks a
    schema registry)."""
    if context == WRITE:
        spec = parse_write_spec(options, DATA if schema is None else schema)
        if not {options.get("key.format"), options.get("value.format")} & set(REGISTRY_FORMATS):
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


def format_options(fmt: str, role: str) -> dict[str, str]:
    other = "value" if role == "key" else "key"
    more = {f"{role}.format": fmt, f"{other}.format": "json"}
    if fmt in REGISTRY_FORMATS:
        more[f"{role}.{fmt}.url"] = REGISTRY
    if fmt == "raw":
        more["value.fields-include"] = "EXCEPT_KEY"  # the raw value holds one column
    return more
