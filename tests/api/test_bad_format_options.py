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
from pyspark_upsert_kafka.kernel.option_kinds import Text

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
    **{
        fmt: {"url": [("empty", ""), ("not-http", "ftp://registry:8081"), ("no-scheme", "registry:8081")]}
        for fmt in ("avro-confluent", "debezium-avro-confluent", "json-confluent")
    },
}


def _bad(fmt: str) -> dict[str, list[tuple[str, str]]]:
    """Per declared option of the format: the values its kind refuses, then its own rules."""
    declared = codec_class(fmt, "value.format").declared_options
    rules = RULES.get(fmt, {})
    return {o.name: bad_values(o.kind) + rules.get(o.name, []) for o in declared}


def _format_cases() -> list:
    cases = []
    for fmt in FORMATS:
        declared = codec_class(fmt, "value.format").declared_options
        for role in ("value",) if fmt in CHANGELOG_FORMATS else ("key", "value"):  # a changelog one: value only
            prefix, base = f"{role}.{fmt}.", format_options(fmt, role)
            for option in declared:
                for spelling in (option.name, *option.aliases):
                    name = prefix + spelling
                    for label, value in _bad(fmt)[option.name]:
                        for context in (READ, WRITE):
                            more = {k: v for k, v in base.items() if k != prefix + option.name} | {name: value}
                            names = (name, prefix + option.name)  # a rule between options names the declared one
                            cases.append(pytest.param(context, more, names, id=f"{context}-{name}-{label}"))
                for alias in option.aliases:  # an alias disagreeing with the declared name
                    more = base | {prefix + option.name: "a", prefix + alias: "b"}
                    names = (prefix + option.name, prefix + alias)
                    cases.append(pytest.param(WRITE, more, names, id=f"write-{prefix}{alias}-disagrees"))
            mistakes = {"no-such-option": f"{prefix}no-such-option"}
            if fmt != "json":  # the format's option given while the role's format is another
                mistakes["of-another-format"] = prefix + declared[0].name
            for label, name in mistakes.items():
                for context in (READ, WRITE):
                    more = (base if label == "no-such-option" else {f"{role}.format": "json"}) | {name: "x"}
                    cases.append(pytest.param(context, more, (name,), id=f"{context}-{name}-{label}"))
    return cases


@pytest.mark.parametrize(("context", "more", "names"), _format_cases())
def test_bad_format_option_is_one_error_naming_it(context, more, names):
    schema = struct(("id", IntegerType()), ("name", StringType()), ("_change_type", StringType()))
    rejected(context, BASE | more, schema if context != WRITE else None, OptionError, names, quoted=False)


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
