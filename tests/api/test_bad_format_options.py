"""The generated bad-input suite, format options (issue 19): every option of every built-in format with the values
its declared kind refuses (and its own rules), and an unknown option per format, in the key and value position a
format may take; for reads and writes. Each mistake must be one error of the connector's own type naming the option,
raised while the driver builds the read or write spec. Catalog options: test_bad_options.py; schemas:
test_bad_schemas.py, test_bad_types.py.
"""

from __future__ import annotations

import pytest
from pyspark.sql.types import IntegerType, StringType
from pyspark_upsert_kafka import OptionError
from pyspark_upsert_kafka.formats import codec_class
from pyspark_upsert_kafka.formats.option_kinds import Text

from tests.support.bad_inputs import BASE, CHANGELOG_FORMATS, FORMATS, READ, WRITE, format_options, rejected, struct
from tests.support.bad_kinds import bad_values

# The format options' own rules, beyond the value their kind takes: per format, option -> (label, value). The other
# free-text options (names, literals, credentials) take any text.
RULES: dict[str, dict[str, list[tuple[str, str]]]] = {
    "csv": {
        "quote-character": [("same-as-delimiter", ",")],
        "escape-character": [("same-as-quote", '"')],
        "array-element-delimiter": [("empty", "")],
    },
    "avro-confluent": {"url": [("empty", ""), ("not-http", "ftp://registry:8081")]},
}


def _bad(fmt: str) -> dict[str, list[tuple[str, str]]]:
    """Per declared option of the format: the values its kind refuses, then its own rules."""
    declared = codec_class(fmt, "value.format").declared_options
    rules = RULES.get(fmt, {})
    return {o.name: bad_values(o.kind) + rules.get(o.name, []) for o in declared}


def _format_cases() -> list:
    cases = []
    for fmt in FORMATS:
        for role in ("value",) if fmt in CHANGELOG_FORMATS else ("key", "value"):  # a changelog one: value only
            for option, values in _bad(fmt).items():
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


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_option_has_bad_values_or_takes_any_text(fmt):
    # A kind with refusable values brings its cases; only free text (kind Text) may have none.
    for option in codec_class(fmt, "value.format").declared_options:
        assert _bad(fmt)[option.name] or isinstance(option.kind, Text), f"give '{fmt}.{option.name}' bad values"


def test_rules_are_of_declared_format_options():
    for fmt, rules in RULES.items():
        assert not set(rules) - codec_class(fmt, "value.format").option_names


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_default_is_a_value_of_the_options_kind(fmt):
    for option in codec_class(fmt, "value.format").declared_options:
        option.default_value()
