"""The generated bad-input suite, options (issue 19): every option of the catalog with values of the wrong type,
out of range, empty and malformed, derived from the kind the catalog declares for it (bad_values), plus each
free-text option's own rules; unknown options and disagreeing aliases; for reads, streaming reads and writes. Each
mistake must be one error of the connector's own type naming the option, raised while the driver builds the read or
write spec: pure logic, no broker, no Spark. The format options are in
test_bad_format_options.py, the schema half (with the cases through Spark itself) in test_bad_schemas.py and
test_bad_types.py; the session's summary line counts them all (tests/api/conftest.py). Deterministic: no random
input.
"""

from __future__ import annotations

import pytest
from pyspark_upsert_kafka import OptionError, SchemaError
from pyspark_upsert_kafka.kernel.option_kinds import Option
from pyspark_upsert_kafka.options.catalog import OPTIONS

from tests.support.bad_inputs import (
    BASE,
    CHANGELOG_FORMATS,
    CONTEXTS,
    READ,
    READ_STREAM,
    WRITE,
    plan,
    rejected,
)
from tests.support.bad_kinds import bad_values


@pytest.mark.parametrize("context", CONTEXTS)
def test_the_base_options_are_valid_so_each_case_fails_for_its_own_mistake(context):
    plan(context, BASE)


# =============================================================================================================
# Options of the catalog, by their declared kinds


# Options a value needs beside it to be read at all (a timestamp only counts in the timestamp mode, ...).
COMPANIONS: dict[str, dict[str, str]] = {
    "topic-pattern": {"topic": ""},
    "scan.startup.timestamp-millis": {"scan.startup.mode": "timestamp"},
    "scan.bounded.timestamp-millis": {"scan.bounded.mode": "timestamp"},
    "scan.startup.specific-offsets": {"scan.startup.mode": "specific-offsets"},
    "scan.bounded.specific-offsets": {"scan.bounded.mode": "specific-offsets"},
    "scan.split.max-records": {"read.mode": "changelog"},
    "minPartitions": {"read.mode": "changelog"},
    "changelog.compact": {"read.mode": "changelog"},
    "maxTriggerDelay": {"minOffsetsPerTrigger": "5"},
    "startingOffsetsByTimestampStrategy": {"startingTimestamp": "1700000000000"},
    "sink.buffer-flush.max-rows": {"sink.buffer-flush.interval": "1 s"},
    "sink.buffer-flush.interval": {"sink.buffer-flush.max-rows": "10"},
}

# The options' own rules, beyond the value their kind takes (a grammar of free text, a rule between options): (label,
# options, expected error type, contexts or None for the option's own). The label names the mistake in the test id.
OptionCase = tuple[str, dict[str, str], type, tuple[str, ...] | None]
RULES: dict[str, list[OptionCase]] = {
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
    "properties.bootstrap.servers": [
        ("empty", {"properties.bootstrap.servers": ""}, OptionError, None),
        ("blank", {"properties.bootstrap.servers": " "}, OptionError, None),
        ("empty-entry", {"properties.bootstrap.servers": "a:9092,,b:9092"}, OptionError, None),
        ("no-host", {"properties.bootstrap.servers": ":9092"}, OptionError, None),
        ("empty-port", {"properties.bootstrap.servers": "host:"}, OptionError, None),
        ("port-not-a-number", {"properties.bootstrap.servers": "host:port"}, OptionError, None),
        ("port-zero", {"properties.bootstrap.servers": "host:0"}, OptionError, None),
        ("port-out-of-range", {"properties.bootstrap.servers": "host:70000"}, OptionError, None),
    ],
    "key.fields": [
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
    "key.fields-prefix": [
        ("without-except-key", {"key.fields-prefix": "k_"}, OptionError, None),
        (
            "key-column-without-it",
            {"key.fields-prefix": "k_", "value.fields-include": "EXCEPT_KEY"},
            OptionError,
            None,
        ),
        ("the-whole-key-name", {"key.fields-prefix": "id", "value.fields-include": "EXCEPT_KEY"}, OptionError, None),
        (
            "with-a-changelog-value-format",
            {"key.fields-prefix": "k_", "value.fields-include": "EXCEPT_KEY", "value.format": "canal-json"},
            OptionError,
            None,
        ),
    ],
    "value.fields-include": [  # a change envelope holds whole rows
        (f"except-key-with-{fmt}", {"value.fields-include": "EXCEPT_KEY", "value.format": fmt}, OptionError, None)
        for fmt in CHANGELOG_FORMATS
    ],
    "metadata.columns": [
        ("unknown-kind", {"metadata.columns": "offsets"}, OptionError, None),
        ("empty-kind", {"metadata.columns": "a="}, OptionError, None),
        ("twice", {"metadata.columns": "offset, offset"}, OptionError, None),
        ("twice-other-case", {"metadata.columns": "offset, OFFSET=partition"}, OptionError, None),
        ("two-equals", {"metadata.columns": "a=b=offset"}, OptionError, None),
        ("the-change-column", {"metadata.columns": "_change_type=offset"}, OptionError, None),
        ("missing-from-the-schema", {"metadata.columns": "offset"}, SchemaError, None),
        ("value-metadata-of-a-format-without", {"metadata.columns": "value.source.timestamp"}, OptionError, None),
        (
            "unknown-value-metadata",
            {"metadata.columns": "value.source.timestamps", "value.format": "debezium-json"},
            OptionError,
            None,
        ),
        (
            "other-formats-value-metadata",
            {"metadata.columns": "value.source.table", "value.format": "maxwell-json"},
            OptionError,
            None,
        ),
        (
            "value-metadata-missing-from-the-schema",
            {"metadata.columns": "value.table", "value.format": "canal-json"},
            SchemaError,
            None,
        ),
    ],
    **{
        f"{role}.format": [
            (label, {f"{role}.format": value}, OptionError, None)
            for label, value in (
                ("empty", ""),
                ("unknown", "jsn"),
                ("missing-module", "no_such_module_here:Codec"),
                ("missing-class", "json:NoSuchCodec"),
                ("not-a-codec", "builtins:int"),
            )
        ]
        + [(f"raw-{role}-of-two-columns", {f"{role}.format": "raw", "key.fields": "id;name"}, SchemaError, None)]
        + [  # a change envelope holds whole rows: a value format only
            (f"changelog-format-{fmt}", {"key.format": fmt}, OptionError, None)
            for fmt in CHANGELOG_FORMATS
            if role == "key"
        ]
        for role in ("key", "value")
    },
    "schema": [
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
    "changelog.column": [
        ("empty", {"changelog.column": ""}, OptionError, None),
        ("blank", {"changelog.column": "  "}, OptionError, None),
        ("the-key-column", {"changelog.column": "id"}, OptionError, None),
        ("a-metadata-column", {"changelog.column": "offset", "metadata.columns": "offset"}, OptionError, None),
    ],
    "properties.*": [
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
            "sasl.login.callback.handler.class",
            "sasl.client.callback.handler.class",
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
    "assign": [
        (label, {"topic": "", "assign": value}, OptionError, None)
        for label, value in (
            ("empty", ""),
            ("not-json", "{orders:[0]}"),
            ("a-list", "[0, 1]"),
            ("empty-object", "{}"),
            ("partitions-not-a-list", '{"t": 0}'),
            ("no-partitions", '{"t": []}'),
            ("negative-partition", '{"t": [-1]}'),
            ("fraction", '{"t": [1.5]}'),
            ("boolean", '{"t": [true]}'),
            ("partition-as-text", '{"t": ["0"]}'),
            ("partition-twice", '{"t": [0, 0]}'),
            ("bad-topic-name", '{"a/b": [0]}'),
        )
    ]
    + [
        ("with-topic", {"assign": '{"t": [0]}'}, OptionError, None),
        ("with-subscribe", {"topic": "", "subscribe": "t", "assign": '{"t": [0]}'}, OptionError, None),
        ("with-topic-pattern", {"topic": "", "topic-pattern": "t.*", "assign": '{"t": [0]}'}, OptionError, None),
        ("on-a-write", {"topic": "", "assign": '{"t": [0]}'}, OptionError, (WRITE,)),
        (
            "offsets-of-another-topic",
            {"topic": "", "assign": '{"t": [0]}', "startingOffsets": '{"u": {"0": 1}}'},
            OptionError,
            None,
        ),
    ],
    "read.mode": [
        ("streaming", {"read.mode": "streaming"}, OptionError, None),
        ("table-for-a-stream", {"read.mode": "table"}, OptionError, (READ_STREAM,)),
    ],
    "scan.startup.mode": [
        (label, {"scan.startup.mode": value}, OptionError, None)
        for label, value in (("spark-word", "earliest"), ("unknown", "beginning"), ("none", "none"))
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
    "scan.bounded.mode": [
        (label, {"scan.bounded.mode": value}, OptionError, None)
        for label, value in (("earliest", "earliest-offset"), ("unknown", "end"), ("none", "none"))
    ]
    + [
        ("timestamp-without-millis", {"scan.bounded.mode": "timestamp"}, OptionError, None),
        ("specific-without-offsets", {"scan.bounded.mode": "specific-offsets"}, OptionError, None),
        ("millis-without-mode", {"scan.bounded.timestamp-millis": "1700000000000"}, OptionError, None),
        ("with-endingTimestamp", {"scan.bounded.mode": "latest-offset", "endingTimestamp": "1"}, OptionError, None),
    ],
    "properties.sasl.oauthbearer.token-provider": [
        (
            label,
            {"properties.sasl.oauthbearer.token-provider": value, "properties.security.protocol": "SASL_SSL"} | more,
            OptionError,
            None,
        )
        for label, value, more in (
            ("empty", "", {}),
            ("no-function", "os.path", {}),
            ("missing-module", "no_such_module_here:token", {}),
            ("missing-function", "os:no_such_function", {}),
            ("not-a-function", "os:sep", {}),
            ("no-sasl", "os:getcwd", {"properties.security.protocol": "SSL"}),
            ("other-mechanism", "os:getcwd", {"kafka.sasl.mechanism": "PLAIN"}),
            ("with-oidc", "os:getcwd", {"properties.sasl.oauthbearer.method": "oidc"}),
        )
    ],
    "sink.partitioner": [
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
    # Flink: max-rows and interval are both greater than zero, or both zero (no buffer).
    "sink.buffer-flush.max-rows": [
        (
            "zero-with-an-interval",
            {"sink.buffer-flush.max-rows": "0", "sink.buffer-flush.interval": "1 s"},
            OptionError,
            None,
        ),
        ("without-interval", {"sink.buffer-flush.max-rows": "10"}, OptionError, None),
    ],
    "sink.buffer-flush.interval": [
        (
            "zero-with-max-rows",
            {"sink.buffer-flush.interval": "0", "sink.buffer-flush.max-rows": "10"},
            OptionError,
            None,
        ),
        ("without-max-rows", {"sink.buffer-flush.interval": "1 s"}, OptionError, None),
    ],
    "sink.delivery-guarantee": [
        ("at-most-once", {"sink.delivery-guarantee": "at-most-once"}, OptionError, None),
        ("exactly-once-without-prefix", {"sink.delivery-guarantee": "exactly-once"}, OptionError, None),
    ],
    "groupIdPrefix": [
        (label, {"groupIdPrefix": v}, OptionError, None) for label, v in (("empty", ""), ("blank", "  "))
    ],
    "sink.transactional-id-prefix": [
        (label, {"sink.delivery-guarantee": "exactly-once", "sink.transactional-id-prefix": v}, OptionError, None)
        for label, v in (("empty", ""), ("blank", "  "))
    ],
    # BASE has 'key.fields', which a multi-table write refuses; its other mistakes: tests/unit/test_tables_options.py
    **{
        name: [
            ("without-the-table-column", {"sink.custom-header": "a:b"}, OptionError, None),
            ("with-key-fields", {"sink.table-id.column": "name"}, OptionError, None),
        ]
        for name in (
            "sink.table-id.column",
            "sink.table-id.key-fields",
            "sink.table-id.fields",
            "sink.tableId-to-topic.mapping",
            "sink.custom-header",
        )
    },
    "sink.parallelism": [
        (label, {"sink.parallelism": v}, OptionError, None) for label, v in (("four", "4"), ("empty", ""))
    ],
    "sink.write-id": [
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


def _contexts(option: Option) -> tuple[str, ...]:
    return {"read": (READ, READ_STREAM), "write": (WRITE,)}.get(option.scope, CONTEXTS)


def _cases_of(option: Option) -> list[OptionCase]:
    """The option's cases: the values its declared kind refuses (with the options they need beside them), then
    its own rules."""
    companions = COMPANIONS.get(option.name, {})
    by_kind = [(label, {option.name: v} | companions, OptionError, None) for label, v in bad_values(option.kind)]
    return by_kind + RULES.get(option.name, [])


def _option_cases() -> list:
    cases = []
    for option in OPTIONS:
        for label, more, error, contexts in _cases_of(option):
            # The error names the option, one of the options the case sets, or (option 'schema') a column.
            names = (option.name, *option.aliases, *(k.replace("kafka.", "properties.") for k in more), *SCHEMA_COLUMNS)
            for context in contexts or _contexts(option):
                cases.append(pytest.param(context, more, error, names, id=f"{context}-{option.name}-{label}"))
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


@pytest.mark.parametrize("option", OPTIONS, ids=lambda o: o.name)
def test_every_catalog_option_has_bad_values(option):
    # A kind with refusable values brings its cases; free text needs rules of its own (RULES).
    assert _cases_of(option), f"give the bad-input suite rules for option '{option.name}' (free text)"


def test_rules_are_of_catalog_options():
    assert not set(RULES) - {o.name for o in OPTIONS}


@pytest.mark.parametrize("option", OPTIONS, ids=lambda o: o.name)
def test_every_default_is_a_value_of_the_options_kind(option):
    # The parsers read defaults through the kind (OptionValues.value): a default its kind refuses would fail a
    # query that never gave the option.
    for streaming in (False, True):
        option.default_value(streaming)


@pytest.mark.parametrize("context", CONTEXTS)
def test_a_bad_value_under_an_alias_is_named_as_given(context):
    # Spark hands keys lower-cased; the error spells the alias as the catalog declares it, which the user wrote.
    message = rejected(
        context, BASE | {"fetchoffset.numretries": "many"}, None, OptionError, ("fetchOffset.numRetries",)
    )
    assert "must be a whole number" in message
