"""Every option the connector knows: its Flink spelling, Spark aliases, default and meaning.

This table drives validation (unknown options, did-you-mean, alias conflicts) and the README's option
table, so the two cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass

READ, WRITE, BOTH = "read", "write", "read/write"


@dataclass(frozen=True)
class OptionDoc:
    name: str
    default: str | None
    applies: str
    meaning: str
    aliases: tuple[str, ...] = ()


COMMON_OPTIONS: tuple[OptionDoc, ...] = (
    OptionDoc("topic", None, BOTH, "The Kafka topic to read or write.", ("subscribe",)),
    OptionDoc(
        "properties.bootstrap.servers",
        None,
        BOTH,
        "Comma-separated host:port list of Kafka brokers (required).",
        ("kafka.bootstrap.servers",),
    ),
    OptionDoc(
        "key.fields",
        None,
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
        "`headers`, `leader-epoch`, comma-separated, each optionally renamed (`event_time=timestamp`). "
        "Written: `timestamp`, `headers`.",
    ),
    OptionDoc("key.format", "json", BOTH, "Format of the record key."),
    OptionDoc("value.format", "json", BOTH, "Format of the record value.", ("format",)),
    OptionDoc(
        "schema",
        None,
        BOTH,
        "The table's data columns as DDL (`id INT, name STRING`), when not given with `.schema(...)`; "
        "the changelog column is then added for you.",
    ),
    OptionDoc(
        "changelog.column",
        "_change_type",
        BOTH,
        "Column holding the change type (`upsert` / `delete`); on write a `delete` becomes a tombstone.",
    ),
    OptionDoc(
        "client.timeout",
        "30 s",
        BOTH,
        "How long a metadata or offset request to the brokers may take before the query fails.",
    ),
    OptionDoc(
        "properties.*",
        None,
        BOTH,
        "Passed to the librdkafka client (e.g. `properties.security.protocol`); `kafka.*` is accepted too.",
    ),
)

# Options of reads only (issue: the complete reader).
READ_OPTIONS: tuple[OptionDoc, ...] = (
    OptionDoc(
        "read.mode",
        "table (batch), changelog (streaming)",
        READ,
        "`table`: the latest value per key, deleted keys removed. `changelog`: one row per record.",
    ),
)

# Options of writes only (issue: the complete writer).
WRITE_OPTIONS: tuple[OptionDoc, ...] = ()

OPTIONS = COMMON_OPTIONS + READ_OPTIONS + WRITE_OPTIONS

PASS_THROUGH_PREFIXES = ("properties.", "kafka.")
