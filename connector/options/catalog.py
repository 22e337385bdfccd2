"""Every option the connector knows, declared once (kernel/option_kinds.Option): its Flink spelling, Spark
aliases, kind of value, default, scope and meaning.

This table drives parsing (canonical.canonical_options: every given option typed once by its kind), validation
(unknown options, did-you-mean, alias conflicts), the README's option table and the bad-input suite
(tests/api/test_bad_options.py), so none of them can drift apart.
"""

from __future__ import annotations

from ..kernel.option_kinds import BOTH, Choice, Count, Option, Text
from .catalog_read import READ_OPTIONS
from .catalog_write import WRITE_OPTIONS
from .kinds import Duration, FlinkColumnTypes

COMMON_OPTIONS: tuple[Option, ...] = (
    Option(
        "topic",
        None,
        BOTH,
        "The topic; a `;`-separated list for reads (Spark's `subscribe` takes a comma list), and for writes that "
        "take each row's topic from the `topic` metadata column. A read may give `topic-pattern` or `assign` instead.",
        ("subscribe",),
        kind=Text("topic list (`;`)"),
        note="required",
    ),
    Option(
        "properties.bootstrap.servers",
        None,
        BOTH,
        "Comma-separated host:port list of Kafka brokers (required).",
        ("kafka.bootstrap.servers",),
        kind=Text("host:port list (`,`)"),
        note="required",
    ),
    Option(
        "key.fields",
        None,
        BOTH,
        "The primary key: `;`-separated column names, in the order they form the record key (required).",
        kind=Text("column list (`;`)"),
        note="required",
    ),
    Option(
        "key.fields-prefix",
        "",
        BOTH,
        "A prefix the key columns carry in the table but not in the key format, to keep key and value "
        "names apart; requires `value.fields-include=EXCEPT_KEY`.",
        kind=Text(),
    ),
    Option(
        "value.fields-include",
        "ALL",
        BOTH,
        "`ALL`: the value holds every data column, key columns included. `EXCEPT_KEY`: the value holds the "
        "non-key columns only.",
        kind=Choice(("ALL", "EXCEPT_KEY")),
    ),
    Option(
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
    ),
    Option(
        "key.format",
        "json",
        BOTH,
        "Format of the record key (the column types each holds: see Formats).",
        kind=Text("format"),
    ),
    Option(
        "value.format",
        "json",
        BOTH,
        "Format of the record value (the column types each holds: see Formats).",
        ("format",),
        kind=Text("format"),
    ),
    Option(
        "schema",
        None,
        BOTH,
        "The table's data columns as DDL (`id INT, name STRING`), when not given with `.schema(...)`; "
        "the changelog column is then added for you (or listed once, as STRING).",
        kind=Text("DDL"),
    ),
    Option(
        "flink.column-types",
        None,
        BOTH,
        "The Flink type each listed column stands for where its Spark type carries less: a timestamp's precision "
        "(`ts TIMESTAMP(3), created TIMESTAMP_LTZ(3), payload.at TIMESTAMP(3)`; Spark's TIMESTAMP_NTZ and "
        "TIMESTAMP hold microseconds, Flink's TIMESTAMP(6) and TIMESTAMP_LTZ(6)). The formats write what Flink "
        "writes for that type (avro: millis for precision 0 to 3), and a write refuses finer values than the type "
        "holds. `flink_table` sets it from the statement.",
        kind=FlinkColumnTypes(),
    ),
    Option(
        "changelog.column",
        "_change_type",
        BOTH,
        "Column holding the change type (`upsert` / `delete`; with a change-data-capture format's "
        "`changelog-mode=all`: `insert`, `update_preimage`, `update_postimage`, `delete`); on write a `delete` "
        "becomes a tombstone (or a delete envelope).",
        kind=Text("column"),
    ),
    Option(
        "client.timeout",
        "30 s",
        BOTH,
        "How long one request to the brokers (metadata, offsets, a transaction step) may wait for an answer.",
        kind=Duration(),
    ),
    Option(
        "client.retries",
        "30",
        BOTH,
        "How many times a request that met a transient error (a broker restarting, a leader or coordinator moving, "
        "no answer in time) is retried before the query fails. A query waits at most `client.timeout` + "
        "`client.retries` * `client.retry-interval` (60 s by default) for its brokers.",
        ("fetchOffset.numRetries",),
        kind=Count(),
    ),
    Option(
        "client.retry-interval",
        "1 s",
        BOTH,
        "The pause between two retries of a request that met a transient error (a bare number is milliseconds).",
        ("fetchOffset.retryIntervalMs",),
        kind=Duration(allow_zero=True),
    ),
    Option(
        "client.pool.idle-timeout",
        "5 min",
        BOTH,
        "How long a Kafka client stays open in a Spark Python worker after its task, for the next task or "
        "micro-batch that needs one with the same settings (opening a client costs a connection, metadata and a "
        "producer id); `0` closes every client after its task.",
        kind=Duration(allow_zero=True),
    ),
    Option(
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
    ),
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


# Every option as a constant, as Flink's KafkaConnectorOptions: code reads `values.value(READ_MODE)`, never an option by
# its name string (a misspelt constant is a NameError that ruff sees; a name missing here fails at import).
TOPIC = BY_NAME["topic"]
PROPERTIES_BOOTSTRAP_SERVERS = BY_NAME["properties.bootstrap.servers"]
KEY_FIELDS = BY_NAME["key.fields"]
KEY_FIELDS_PREFIX = BY_NAME["key.fields-prefix"]
VALUE_FIELDS_INCLUDE = BY_NAME["value.fields-include"]
METADATA_COLUMNS = BY_NAME["metadata.columns"]
KEY_FORMAT = BY_NAME["key.format"]
VALUE_FORMAT = BY_NAME["value.format"]
SCHEMA = BY_NAME["schema"]
FLINK_COLUMN_TYPES = BY_NAME["flink.column-types"]
CHANGELOG_COLUMN = BY_NAME["changelog.column"]
CLIENT_TIMEOUT = BY_NAME["client.timeout"]
CLIENT_RETRIES = BY_NAME["client.retries"]
CLIENT_RETRY_INTERVAL = BY_NAME["client.retry-interval"]
CLIENT_POOL_IDLE_TIMEOUT = BY_NAME["client.pool.idle-timeout"]
PROPERTIES_SASL_OAUTHBEARER_TOKEN_PROVIDER = BY_NAME["properties.sasl.oauthbearer.token-provider"]
TOPIC_PATTERN = BY_NAME["topic-pattern"]
ASSIGN = BY_NAME["assign"]
READ_MODE = BY_NAME["read.mode"]
CHANGELOG_COMPACT = BY_NAME["changelog.compact"]
SCAN_TABLE_MEMORY_BUDGET = BY_NAME["scan.table.memory-budget"]
SCAN_STARTUP_MODE = BY_NAME["scan.startup.mode"]
SCAN_STARTUP_TIMESTAMP_MILLIS = BY_NAME["scan.startup.timestamp-millis"]
SCAN_STARTUP_SPECIFIC_OFFSETS = BY_NAME["scan.startup.specific-offsets"]
STARTING_OFFSETS = BY_NAME["startingOffsets"]
STARTING_TIMESTAMP = BY_NAME["startingTimestamp"]
STARTING_OFFSETS_BY_TIMESTAMP = BY_NAME["startingOffsetsByTimestamp"]
STARTING_OFFSETS_BY_TIMESTAMP_STRATEGY = BY_NAME["startingOffsetsByTimestampStrategy"]
SCAN_BOUNDED_MODE = BY_NAME["scan.bounded.mode"]
SCAN_BOUNDED_TIMESTAMP_MILLIS = BY_NAME["scan.bounded.timestamp-millis"]
SCAN_BOUNDED_SPECIFIC_OFFSETS = BY_NAME["scan.bounded.specific-offsets"]
ENDING_OFFSETS = BY_NAME["endingOffsets"]
ENDING_TIMESTAMP = BY_NAME["endingTimestamp"]
ENDING_OFFSETS_BY_TIMESTAMP = BY_NAME["endingOffsetsByTimestamp"]
SCAN_MAX_RECORDS_PER_BATCH = BY_NAME["scan.max-records-per-batch"]
MIN_OFFSETS_PER_TRIGGER = BY_NAME["minOffsetsPerTrigger"]
MAX_TRIGGER_DELAY = BY_NAME["maxTriggerDelay"]
SCAN_SPLIT_MAX_RECORDS = BY_NAME["scan.split.max-records"]
MIN_PARTITIONS = BY_NAME["minPartitions"]
SCAN_COALESCE_MAX_RECORDS = BY_NAME["scan.coalesce.max-records"]
SCAN_FILTER_KEY_PARTITIONS = BY_NAME["scan.filter.key-partitions"]
GROUP_ID_PREFIX = BY_NAME["groupIdPrefix"]
SCAN_FAIL_ON_DATA_LOSS = BY_NAME["scan.fail-on-data-loss"]
SCAN_TOPIC_PARTITION_DISCOVERY_INTERVAL = BY_NAME["scan.topic-partition-discovery.interval"]
SCAN_WATERMARK_IDLE_TIMEOUT = BY_NAME["scan.watermark.idle-timeout"]
SCAN_WATERMARK_ALIGNMENT_MAX_DRIFT = BY_NAME["scan.watermark.alignment.max-drift"]
SINK_PARTITIONER = BY_NAME["sink.partitioner"]
SINK_BUFFER_FLUSH_MAX_ROWS = BY_NAME["sink.buffer-flush.max-rows"]
SINK_BUFFER_FLUSH_INTERVAL = BY_NAME["sink.buffer-flush.interval"]
SINK_DELIVERY_GUARANTEE = BY_NAME["sink.delivery-guarantee"]
SINK_TRANSACTIONAL_ID_PREFIX = BY_NAME["sink.transactional-id-prefix"]
SINK_PARALLELISM = BY_NAME["sink.parallelism"]
SINK_TABLE_ID_COLUMN = BY_NAME["sink.table-id.column"]
SINK_TABLE_ID_KEY_FIELDS = BY_NAME["sink.table-id.key-fields"]
SINK_TABLE_ID_FIELDS = BY_NAME["sink.table-id.fields"]
SINK_TABLE_ID_TO_TOPIC_MAPPING = BY_NAME["sink.tableId-to-topic.mapping"]
SINK_ADD_TABLE_ID_TO_HEADER_ENABLED = BY_NAME["sink.add-tableId-to-header-enabled"]
SINK_CUSTOM_HEADER = BY_NAME["sink.custom-header"]
SINK_WRITE_ID = BY_NAME["sink.write-id"]


def option(name: str) -> Option:
    """The catalog's option `name` (its declared spelling); a KeyError for a name the catalog does not declare."""
    return BY_NAME[name]


def default_of(option: Option | str, *, streaming: bool = False) -> str:
    """The text of an option's default (the streaming one for a streaming read), as the README shows it."""
    doc = BY_NAME[option if isinstance(option, str) else option.name]
    text = doc.streaming_default if streaming and doc.streaming_default is not None else doc.default
    if text is None:
        raise KeyError(f"option '{doc.name}' has no default")
    return text


PASS_THROUGH_PREFIXES = ("properties.", "kafka.")
