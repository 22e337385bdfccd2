"""Every option the connector knows: its Flink spelling, Spark aliases, default and meaning.

This table drives validation (unknown options, did-you-mean, alias conflicts) and the README's option
table, so the two cannot drift apart.
"""

from __future__ import annotations

from .catalog_read import READ_OPTIONS
from .catalog_write import WRITE_OPTIONS
from .option_doc import BOTH, OptionDoc

COMMON_OPTIONS: tuple[OptionDoc, ...] = (
    OptionDoc(
        "topic",
        "required",
        BOTH,
        "The topic; a `;`-separated list for reads (Spark's `subscribe` takes a comma list), and for writes that "
        "take each row's topic from the `topic` metadata column. A read may give `topic-pattern` or `assign` instead.",
        ("subscribe",),
    ),
    OptionDoc(
        "properties.bootstrap.servers",
        "required",
        BOTH,
        "Comma-separated host:port list of Kafka brokers (required).",
        ("kafka.bootstrap.servers",),
    ),
    OptionDoc(
        "key.fields",
        "required",
        BOTH,
        "The primary key: `;`-separated column names, in the order they form the record key (required).",
    ),
    OptionDoc(
        "key.fields-prefix",
        "",
        BOTH,
        "A prefix the key columns carry in the table but not in the key format, to keep key and value "
        "names apart; requires `value.fields-include=EXCEPT_KEY`.",
    ),
    OptionDoc(
        "value.fields-include",
        "ALL",
        BOTH,
        "`ALL`: the value holds every data column, key columns included. `EXCEPT_KEY`: the value holds the "
        "non-key columns only.",
    ),
    OptionDoc(
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
    ),
    OptionDoc("key.format", "json", BOTH, "Format of the record key (the column types each holds: see Formats)."),
    OptionDoc(
        "value.format",
        "json",
        BOTH,
        "Format of the record value (the column types each holds: see Formats).",
        ("format",),
    ),
    OptionDoc(
        "schema",
        None,
        BOTH,
        "The table's data columns as DDL (`id INT, name STRING`), when not given with `.schema(...)`; "
        "the changelog column is then added for you (or listed once, as STRING).",
    ),
    OptionDoc(
        "changelog.column",
        "_change_type",
        BOTH,
        "Column holding the change type (`upsert` / `delete`; with a change-data-capture format's "
        "`changelog-mode=all`: `insert`, `update_preimage`, `update_postimage`, `delete`); on write a `delete` "
        "becomes a tombstone (or a delete envelope).",
    ),
    OptionDoc(
        "client.timeout",
        "30 s",
        BOTH,
        "How long one request to the brokers (metadata, offsets, a transaction step) may wait for an answer.",
    ),
    OptionDoc(
        "client.retries",
        "30",
        BOTH,
        "How many times a request that met a transient error (a broker restarting, a leader or coordinator moving, "
        "no answer in time) is retried before the query fails. A query waits at most `client.timeout` + "
        "`client.retries` * `client.retry-interval` (60 s by default) for its brokers.",
        ("fetchOffset.numRetries",),
    ),
    OptionDoc(
        "client.retry-interval",
        "1 s",
        BOTH,
        "The pause between two retries of a request that met a transient error (a bare number is milliseconds).",
        ("fetchOffset.retryIntervalMs",),
    ),
    *(
        OptionDoc(
            f"{role}.avro-confluent.{name}",
            default,
            BOTH,
            f"With `{role}.format` = `avro-confluent`: {meaning} `{role}.avro-confluent.schema-registry.{name}` is "
            "Flink's older spelling (its 1.13 release notes; Flink keeps it as a fallback key).",
            (f"{role}.avro-confluent.schema-registry.{name}",),
        )
        for role in ("key", "value")
        for name, default, meaning in (
            ("url", "required", "the schema registry's address (the other `avro-confluent` options: see Formats)."),
            ("subject", "`<topic>-" + role + "`", "the subject the schema is registered under."),
        )
    ),
    OptionDoc(
        "client.pool.idle-timeout",
        "5 min",
        BOTH,
        "How long a Kafka client stays open in a Spark Python worker after its task, for the next task or "
        "micro-batch that needs one with the same settings (opening a client costs a connection, metadata and a "
        "producer id); `0` closes every client after its task.",
    ),
    OptionDoc(
        "properties.sasl.oauthbearer.token-provider",
        None,
        BOTH,
        "SASL/OAUTHBEARER tokens made by code (Amazon MSK IAM, Google Managed Kafka): `package.module:function`, "
        "called with `properties.sasl.oauthbearer.config` and returning `(token, expiry in epoch seconds[, principal"
        "[, extensions]])`, again before each token expires. Every process that opens a Kafka client imports it (pip "
        "install it on the executors, or `--py-files`). Needs `properties.security.protocol` `SASL_SSL` (or "
        "`SASL_PLAINTEXT`); sets `properties.sasl.mechanism` to `OAUTHBEARER`.",
        ("kafka.sasl.oauthbearer.token-provider",),
    ),
    OptionDoc(
        "properties.*",
        None,
        BOTH,
        "Passed to the librdkafka client (e.g. `properties.security.protocol`); `kafka.*` is accepted too.",
    ),
)

# Options of reads only (issue: the complete reader).
OPTIONS = COMMON_OPTIONS + READ_OPTIONS + WRITE_OPTIONS
_BY_NAME = {doc.name: doc for doc in OPTIONS}


def default_of(name: str, *, streaming: bool = False) -> str:
    """The value option `name` (its catalog spelling) takes when it is not given: the catalog's, so that the
    parsers and the README's option table cannot disagree."""
    doc = _BY_NAME[name]
    if streaming and doc.streaming_default is not None:
        return doc.streaming_default
    if doc.default is None or doc.default == "required":
        raise KeyError(f"option '{name}' has no default")
    return doc.default


PASS_THROUGH_PREFIXES = ("properties.", "kafka.")
