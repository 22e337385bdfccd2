"""The generated bad-input suite, format options (issue 19): every option of every built-in format with bad values,
and an unknown option per format, in the key and value position a format may take; for reads and writes. Each
mistake must be one error of the connector's own type naming the option, raised while the driver builds the read or
write spec. Catalog options: test_bad_options.py; schemas: test_bad_schemas.py, test_bad_types.py.
"""

from __future__ import annotations

import pytest
from pyspark.sql.types import IntegerType, StringType
from pyspark_upsert_kafka import OptionError
from pyspark_upsert_kafka.formats import codec_class

from tests.support.bad_inputs import BASE, CHANGELOG_FORMATS, FORMATS, READ, WRITE, format_options, rejected, struct

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
        "write-bigdecimal-in-scientific-notation": [("word", "maybe")],
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
    **{
        fmt: {
            "ignore-parse-errors": [("word", "maybe")],
            "timestamp-format.standard": [("unknown", "ISO")],
            "map-null-key.mode": [("unknown", "KEEP")],
            "encode.decimal-as-plain-number": [("word", "yes")],
            "encode.ignore-null-fields": [("empty", "")],
            "changelog-mode": [("unknown", "retract"), ("empty", "")],
        }
        | more
        for fmt, more in (
            ("debezium-json", {"schema-include": [("word", "maybe")]}),
            ("canal-json", {"database.include": [("not-a-regex", "(")], "table.include": [("not-a-regex", "[a")]}),
            ("maxwell-json", {}),
        )
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
    "debezium-json": {"map-null-key.literal"},
    "canal-json": {"map-null-key.literal"},
    "maxwell-json": {"map-null-key.literal"},
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


def _format_cases() -> list:
    cases = []
    for fmt, bad in FORMAT_BAD.items():
        for role in ("value",) if fmt in CHANGELOG_FORMATS else ("key", "value"):  # a changelog one: value only
            for option, values in bad.items():
                name = f"{role}.{fmt}.{option}"
                for label, value in values:
                    for context in (READ, WRITE):
                        more = format_options(fmt, role) | {name: value}
                        cases.append(pytest.param(context, more, name, id=f"{context}-{name}-{label}"))
            unknown = f"{role}.{fmt}.no-such-option"
            for context in (READ, WRITE):
                more = format_options(fmt, role) | {unknown: "x"}
                cases.append(pytest.param(context, more, unknown, id=f"{context}-{unknown}"))
    return cases


@pytest.mark.parametrize(("context", "more", "name"), _format_cases())
def test_bad_format_option_is_one_error_naming_it(context, more, name):
    schema = struct(("id", IntegerType()), ("name", StringType()), ("_change_type", StringType()))
    rejected(context, BASE | more, schema if context != WRITE else None, OptionError, (name,), quoted=False)


def test_every_built_in_format_has_bad_values():
    missing = set(FORMAT_BAD) ^ set(FORMATS)
    assert not missing, f"give the bad-input suite values for the options of: {missing}"


@pytest.mark.parametrize("fmt", sorted(FORMAT_BAD))
def test_every_built_in_format_option_has_bad_values_or_takes_any_text(fmt):
    declared = set(codec_class(fmt, "value.format").option_names)
    assert declared == set(FORMAT_BAD[fmt]) | FREE_TEXT[fmt]
