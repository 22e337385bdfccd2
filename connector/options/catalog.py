"""Every option the connector knows, declared once (kernel/option_kinds.Option): its Flink spelling, Spark
aliases, kind of value, default, scope and meaning.

This table drives parsing (canonical.canonical_options: every given option typed once by its kind), validation
(unknown options, did-you-mean, alias conflicts), the README's option table and the bad-input suite
(tests/api/test_bad_options.py), so none of them can drift apart.

Every option is a typed constant, as Flink's KafkaConnectorOptions: code reads `values.value(READ_MODE)`, never an
option by its name string (a misspelt constant is a NameError that ruff sees), and gets the option's type. The
options both sides take are declared here, the read side's in catalog_read.py, the write side's in
catalog_write.py.
"""

from __future__ import annotations

from typing import Any

from ..kernel.option_kinds import BOTH, Choice, Count, Option, Text
from .catalog_read import READ_OPTIONS
from .catalog_write import WRITE_OPTIONS
from .kinds import ColumnPath, Duration, FlinkColumnTypes, FlinkTimestamp

TOPIC: Option[str | None] = Option(
    "topic",
    None,
    BOTH,
    "The topic; a `;`-separated list for reads (Spark's `subscribe` takes a comma list), and for writes that "
    "take each row's topic from the `topic` metadata column. A read may give `topic-pattern` or `assign` instead.",
    ("subscribe",),
    kind=Text("topic list (`;`)"),
    note="required",
)

PROPERTIES_BOOTSTRAP_SERVERS: Option[str | None] = Option(
    "properties.bootstrap.servers",
    None,
    BOTH,
    "Comma-separated host:port list of Kafka brokers (required).",
    ("kafka.bootstrap.servers",),
    kind=Text("host:port list (`,`)"),
    note="required",
)

KEY_FIELDS: Option[str | None] = Option(
    "key.fields",
    None,
    BOTH,
    "The primary key: `;`-separated column names, in the order they form the record key (required).",
    kind=Text("column list (`;`)"),
    note="required",
)

KEY_FIELDS_PREFIX = Option(
    "key.fields-prefix",
    "",
    BOTH,
    "A prefix the key columns carry in the table but not in the key format, to keep key and value "
    "names apart; requires `value.fields-include=EXCEPT_KEY`.",
    kind=Text(),
)

VALUE_FIELDS_INCLUDE = Option(
    "value.fields-include",
    "ALL",
    BOTH,
    "`ALL`: the value holds every data column, key columns included. `EXCEPT_KEY`: the value holds the "
    "non-key columns only.",
    kind=Choice(("ALL", "EXCEPT_KEY")),
)

METADATA_COLUMNS: Option[str | None] = Option(
    "metadata.columns",
    None,
    BOTH,
    "Record metadata as columns: any of `topic`, `partition`, `offset`, `timestamp`, `timestamp-type`, "
    "`headers` (`MAP<STRING, BINARY>`), `header-list` (`ARRAY<STRUCT<key: STRING NOT NULL, value: BINARY>>`: "
    "the headers in the record's order, a repeated key kept each time), `leader-epoch`, `watermark` (the merged "
    "watermark when the batch was planned), comma-separated, each optionally renamed (`event_time=timestamp`). "
    "Written: `timestamp`, `headers` or `header-list` (one of them); `topic` picks each "
    "row's topic when a write names several. A change-data-capture value format adds its own, read only, as "
    "`value.<key>` (e.g. `value.source.timestamp`: see Formats).",
    kind=Text("metadata list (`,`)"),
)

KEY_FORMAT = Option(
    "key.format",
    "json",
    BOTH,
    "Format of the record key (the column types each holds: see Formats).",
    kind=Text("format"),
)

VALUE_FORMAT = Option(
    "value.format",
    "json",
    BOTH,
    "Format of the record value (the column types each holds: see Formats).",
    ("format",),
    kind=Text("format"),
)

SCHEMA: Option[str | None] = Option(
    "schema",
    None,
    BOTH,
    "The table's data columns as DDL (`id INT, name STRING`), when not given with `.schema(...)`; "
    "the changelog column is then added for you (or listed once, as STRING).",
    kind=Text("DDL"),
)

FLINK_COLUMN_TYPES: Option[dict[ColumnPath, FlinkTimestamp] | None] = Option(
    "flink.column-types",
    None,
    BOTH,
    "The Flink type each listed column stands for where its Spark type carries less: a timestamp's precision "
    "(`ts TIMESTAMP(3), created TIMESTAMP_LTZ(3), payload.at TIMESTAMP(3)`; Spark's TIMESTAMP_NTZ and "
    "TIMESTAMP hold microseconds, Flink's TIMESTAMP(6) and TIMESTAMP_LTZ(6)). The formats write what Flink "
    "writes for that type (avro: millis for precision 0 to 3), and a write refuses finer values than the type "
    "holds. `flink_table` sets it from the statement.",
    kind=FlinkColumnTypes(),
)

CHANGELOG_COLUMN = Option(
    "changelog.column",
    "_change_type",
    BOTH,
    "Column holding the change type (`upsert` / `delete`; with a change-data-capture format's "
    "`changelog-mode=all`: `insert`, `update_preimage`, `update_postimage`, `delete`); on write a `delete` "
    "becomes a tombstone (or a delete envelope).",
    kind=Text("column"),
)

CLIENT_TIMEOUT = Option(
    "client.timeout",
    "30 s",
    BOTH,
    "How long one request to the brokers (metadata, offsets, a transaction step) may wait for an answer.",
    kind=Duration(),
)

CLIENT_RETRIES = Option(
    "client.retries",
    "30",
    BOTH,
    "How many times a request that met a transient error (a broker restarting, a leader or coordinator moving, "
    "no answer in time) is retried before the query fails. A query waits at most `client.timeout` + "
    "`client.retries` * `client.retry-interval` (60 s by default) for its brokers.",
    ("fetchOffset.numRetries",),
    kind=Count(),
)

CLIENT_RETRY_INTERVAL = Option(
    "client.retry-interval",
    "1 s",
    BOTH,
    "The pause between two retries of a request that met a transient error (a bare number is milliseconds).",
    ("fetchOffset.retryIntervalMs",),
    kind=Duration(allow_zero=True),
)

CLIENT_POOL_IDLE_TIMEOUT = Option(
    "client.pool.idle-timeout",
    "5 min",
    BOTH,
    "How long a Kafka client stays open in a Spark Python worker after its task, for the next task or "
    "micro-batch that needs one with the same settings (opening a client costs a connection, metadata and a "
    "producer id); `0` closes every client after its task.",
    kind=Duration(allow_zero=True),
)

PROPERTIES_SASL_OAUTHBEARER_TOKEN_PROVIDER: Option[str | None] = Option(
    "properties.sasl.oauthbearer.token-provider",
    None,
    BOTH,
    "SASL/OAUTHBEARER tokens made by code (Amazon MSK IAM, Google Managed Kafka): `package.module:function`, "
    "called with `properties.sasl.oauthbearer.config` and returning `(token, expiry in epoch seconds[, principal"
    "[, extensions]])`, again before each token expires. Every process that opens a Kafka client imports it (pip "
    "install it on the executors, or `--py-files`). Needs `properties.security.protocol` `SASL_SSL` (or "
    "`SASL_PLAINTEXT`); sets `properties.sasl.mechanism` to `OAUTHBEARER`.",
    ("kafka.sasl.oauthbearer.token-provider",),
    kind=Text("`module:function`"),
)

COMMON_OPTIONS: tuple[Option[Any], ...] = (
    TOPIC,
    PROPERTIES_BOOTSTRAP_SERVERS,
    KEY_FIELDS,
    KEY_FIELDS_PREFIX,
    VALUE_FIELDS_INCLUDE,
    METADATA_COLUMNS,
    KEY_FORMAT,
    VALUE_FORMAT,
    SCHEMA,
    FLINK_COLUMN_TYPES,
    CHANGELOG_COLUMN,
    CLIENT_TIMEOUT,
    CLIENT_RETRIES,
    CLIENT_RETRY_INTERVAL,
    CLIENT_POOL_IDLE_TIMEOUT,
    PROPERTIES_SASL_OAUTHBEARER_TOKEN_PROVIDER,
    Option(
        "properties.*",
        None,
        BOTH,
        "Passed to the librdkafka client (e.g. `properties.security.protocol`); `kafka.*` is accepted too.",
        kind=Text(),
    ),
)

OPTIONS = COMMON_OPTIONS + READ_OPTIONS + WRITE_OPTIONS
BY_NAME = {option.name: option for option in OPTIONS}


def option(name: str) -> Option[Any]:
    """The catalog's option `name` (its declared spelling); a KeyError for a name the catalog does not declare."""
    return BY_NAME[name]


def default_of(option: Option[Any] | str, *, streaming: bool = False) -> str:
    """The text of an option's default (the streaming one for a streaming read), as the README shows it."""
    doc = BY_NAME[option if isinstance(option, str) else option.name]
    text = doc.streaming_default if streaming and doc.streaming_default is not None else doc.default
    if text is None:
        raise KeyError(f"option '{doc.name}' has no default")
    return text


PASS_THROUGH_PREFIXES = ("properties.", "kafka.")
