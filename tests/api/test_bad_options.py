"""The generated bad-input suite, options (issue 19): every option of the catalog with values of the wrong type,
out of range, empty and malformed (by the option's kind), unknown options and disagreeing aliases; for reads,
streaming reads and writes. Each mistake must be one error of the connector's own type naming the option, raised
while the driver builds the read or write spec: pure logic, no broker, no Spark. The format options are in
test_bad_format_options.py, the schema half (with the cases through Spark itself) in test_bad_schemas.py and
test_bad_types.py; the session's summary line counts them all (tests/api/conftest.py). Deterministic: no random
input.
"""

from __future__ import annotations

import pytest
from pyspark_upsert_kafka import OptionError, SchemaError
from pyspark_upsert_kafka.options.catalog import OPTIONS

from tests.support.bad_inputs import (
    BASE,
    CHANGELOG_FORMATS,
    CONTEXTS,
    READ,
    READ_STREAM,
    REGISTRY,
    WRITE,
    plan,
    rejected,
)


@pytest.mark.parametrize("context", CONTEXTS)
def test_the_base_options_are_valid_so_each_case_fails_for_its_own_mistake(context):
    plan(context, BASE)


# =============================================================================================================
# Options of the catalog, by kind


KIND_VALUES: dict[str, list[str]] = {
    "flag": ["", "yes", "1", "maybe", "true false"],
    "duration": ["", "soon", "-1 s", "0", "1 fortnight", "s", "1.5.2 s"],
    "memory-size": ["", "big", "0", "0 mb", "-1 mb", "1.5 gb", "1 pb", "mb"],
    "positive-int": ["", "0", "-1", "1.5", "many", "1e3", " "],
    "count": ["", "-1", "1.5", "many", "1e3", " "],  # zero or more
    "duration-or-zero": ["", "soon", "-1 s", "1 fortnight", "s", "1.5.2 s"],
    "epoch-ms": ["", "yesterday", "-5", "1.5", "1e12"],
    "spark-timestamps": [
        "",
        "{not json",
        '{"t": 5}',
        '{"t": {"x": 1}}',
        '{"t": {"0": -1}}',
        '{"t": {"0": 1.5}}',
        '{"t": {"0": true}}',
        "[1, 2]",
        '{"other": {"0": 1}}',
        "earliest",
    ],
    "group-prefix": ["", "  "],
    "timestamp-strategy": ["", "earliest", "none", "errors", "latest-offset"],
    "spark-time": ["", "soon", "-1s", "0", "0m", "1 fortnight", "1.5m", "15 mins"],
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
    "client.retries": "count",
    "client.retry-interval": "duration-or-zero",
    "client.pool.idle-timeout": "duration-or-zero",
    "properties.*": "properties",
    "properties.sasl.oauthbearer.token-provider": "token-provider",
    "topic-pattern": "topic-pattern",
    "assign": "assign",
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
    "startingOffsetsByTimestamp": "spark-timestamps",
    "endingOffsetsByTimestamp": "spark-timestamps",
    "startingOffsetsByTimestampStrategy": "timestamp-strategy",
    "scan.max-records-per-batch": "positive-int",
    "minOffsetsPerTrigger": "positive-int",
    "maxTriggerDelay": "spark-time",
    "scan.split.max-records": "positive-int",
    "minPartitions": "positive-int",
    "scan.coalesce.max-records": "count",
    "groupIdPrefix": "group-prefix",
    "scan.fail-on-data-loss": "flag",
    "scan.filter.key-partitions": "flag",
    "scan.table.memory-budget": "memory-size",
    "scan.topic-partition-discovery.interval": "duration",
    "scan.watermark.idle-timeout": "duration",
    "scan.watermark.alignment.max-drift": "duration",
    "sink.partitioner": "partitioner",
    "sink.buffer-flush.max-rows": "buffer-rows",
    "sink.buffer-flush.interval": "buffer-interval",
    "sink.delivery-guarantee": "guarantee",
    "sink.transactional-id-prefix": "transactional-id-prefix",
    "sink.write-id": "write-id",
    "sink.parallelism": "refused",
    **{
        name: "multi-table"
        for name in (
            "sink.table-id.column",
            "sink.table-id.key-fields",
            "sink.table-id.fields",
            "sink.tableId-to-topic.mapping",
            "sink.add-tableId-to-header-enabled",
            "sink.custom-header",
        )
    },
    **{f"{role}.avro-confluent.url": f"{role}-registry-url" for role in ("key", "value")},
    **{f"{role}.avro-confluent.subject": f"{role}-registry-subject" for role in ("key", "value")},
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
    "maxTriggerDelay": {"minOffsetsPerTrigger": "5"},
    "startingOffsetsByTimestampStrategy": {"startingTimestamp": "1700000000000"},
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
        (
            "with-a-changelog-value-format",
            {"key.fields-prefix": "k_", "value.fields-include": "EXCEPT_KEY", "value.format": "canal-json"},
            OptionError,
            None,
        ),
    ],
    "include": [
        (label, {"value.fields-include": value}, OptionError, None)
        for label, value in (("empty", ""), ("unknown", "NONE"), ("dashed", "except-key"), ("both", "ALL,EXCEPT_KEY"))
    ]
    + [  # a change envelope holds whole rows
        (f"except-key-with-{fmt}", {"value.fields-include": "EXCEPT_KEY", "value.format": fmt}, OptionError, None)
        for fmt in CHANGELOG_FORMATS
    ],
    "metadata": [
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
        f"{role}-format": [
            (label, {f"{role}.format": value}, OptionError, None)
            for label, value in (
                ("empty", ""),
                ("unknown", "jsn"),
                ("changelog-format-not-built-in", "ogg-json"),
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
    "topic-pattern": [
        (label, {"topic": "", "topic-pattern": value}, OptionError, None)
        for label, value in (("unbalanced-parenthesis", "orders-("), ("open-class", "[a-"), ("nothing-to-repeat", "*"))
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
    "token-provider": [
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
    # BASE has 'key.fields', which a multi-table write refuses; its other mistakes: tests/unit/test_tables_options.py
    "multi-table": [
        ("without-the-table-column", {"sink.custom-header": "a:b"}, OptionError, None),
        ("with-key-fields", {"sink.table-id.column": "name"}, OptionError, None),
    ],
    "refused": [(label, {"sink.parallelism": v}, OptionError, None) for label, v in (("four", "4"), ("empty", ""))],
    # The registry's options belong to the avro-confluent format: given with another format they are a mistake.
    **{
        f"{role}-registry-subject": [
            (f"{spelling}-without-avro-confluent", {f"{role}.avro-confluent.{spelling}": "s"}, OptionError, None)
            for spelling in ("subject", "schema-registry.subject")
        ]
        for role in ("key", "value")
    },
    **{
        f"{role}-registry-url": [  # the registry's other options: test_bad_format_options.py
            (
                label,
                {f"{role}.format": "avro-confluent", f"{role}.avro-confluent.{spelling}": value},
                OptionError,
                None,
            )
            for spelling in ("url", "schema-registry.url")
            for label, value in ((f"{spelling}-empty", ""), (f"{spelling}-not-http", "registry:8081"))
        ]
        + [("without-avro-confluent", {f"{role}.avro-confluent.url": REGISTRY}, OptionError, None)]
        for role in ("key", "value")
    },
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
