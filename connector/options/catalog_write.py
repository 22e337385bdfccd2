"""The catalog's write options (catalog.py assembles them with the common ones)."""

from __future__ import annotations

from enum import Enum
from typing import Any

from ..kernel.option_kinds import WRITE, Choice, Count, Flag, Option, Text
from .catalog_read import VersionSource, VersionSources
from .kinds import Duration


class DeliveryGuarantee(str, Enum):
    """Option sink.delivery-guarantee (Flink's DeliveryGuarantee), weakest first."""

    NONE = "none"
    AT_LEAST_ONCE = "at-least-once"
    EXACTLY_ONCE = "exactly-once"

    def __str__(self) -> str:  # the value, on every Python (3.12 changed a mixed-in enum's format())
        return self.value


SINK_PARTITIONER = Option(
    "sink.partitioner",
    "default",
    WRITE,
    "`default`: the Java client's partitioner (murmur2 of the key bytes), so a key shares its partition with "
    "what Java and Flink producers write. Or a Python function `module:function(key_bytes, num_partitions) "
    "-> int`. `fixed` and `round-robin` are refused: they split a key over partitions.",
    kind=Text("`default` or `module:function`"),
)

SINK_BUFFER_FLUSH_MAX_ROWS = Option(
    "sink.buffer-flush.max-rows",
    "0",
    WRITE,
    "The reducing buffer: keep only the last row per key, flush when this many distinct keys are buffered "
    "(set together with `sink.buffer-flush.interval`).",
    note="off",
    kind=Count(),
)

SINK_BUFFER_FLUSH_INTERVAL = Option(
    "sink.buffer-flush.interval",
    "0",
    WRITE,
    "The reducing buffer: flush at least this often (`1 s`, `500 ms`); always flushed at the end of a task.",
    note="off",
    kind=Duration(allow_zero=True),
)

SINK_UPSERT_VERSION: Option[VersionSource | None] = Option(
    "sink.upsert.version",
    None,
    WRITE,
    "With the reducing buffer: each key's buffered row of the highest version is written, not its last one (equal "
    "versions: the later row), so that an older row that comes later in a flush interval cannot hide a newer one from "
    "readers ordering by version (`scan.upsert.version`, `normalized_changelog(..., version=...)`). `timestamp`: the "
    "row's `timestamp` column; `header:<name>`: that header of its `headers` or `header-list` column, an integer as "
    "text. A row without it fails the write, naming its key.",
    kind=VersionSources(),
)

SINK_DELIVERY_GUARANTEE = Option(
    "sink.delivery-guarantee",
    "at-least-once",
    WRITE,
    "`none` (acks=1), `at-least-once` (idempotent producer, acks=all, a task succeeds only when Kafka has "
    "every record) or `exactly-once` (one Kafka transaction per task, replays never write twice).",
    ("sink.semantic",),
    kind=Choice.of(DeliveryGuarantee, dashes=True),
)

SINK_TRANSACTIONAL_ID_PREFIX: Option[str | None] = Option(
    "sink.transactional-id-prefix",
    None,
    WRITE,
    "Exactly-once (required): the prefix of each task's transactional id, "
    "`<prefix>-<query, write id or job>-<partition>`, so two queries may share a prefix (e.g. one ACL) without "
    "fencing each other; the marker consumer groups are named like the transactional ids.",
    kind=Text("name"),
)

SINK_PARALLELISM: Option[str | None] = Option(
    "sink.parallelism",
    None,
    WRITE,
    "Refused: a Spark write runs one task per DataFrame partition and a Python data source cannot ask for "
    "another distribution. `df.repartition(N, *key columns)` before the write does the same, with every key in "
    "one task.",
    kind=Text("refused"),
)

SINK_TABLE_ID_COLUMN: Option[str | None] = Option(
    "sink.table-id.column",
    None,
    WRITE,
    "The multi-table write (Flink CDC's Kafka pipeline sink): the STRING column naming each row's table "
    "(`db.table`, or `namespace.schema.table`); each table is keyed and enveloped on its own (see Writing several "
    "tables at once). `value.format` `debezium-json` (default here) or `canal-json`, `key.format` `json` or `csv`.",
    kind=Text("column"),
)

SINK_TABLE_ID_KEY_FIELDS: Option[str | None] = Option(
    "sink.table-id.key-fields",
    None,
    WRITE,
    "Multi-table write (required): each table's primary key, `table:col,col;table:col` "
    "(e.g. `shop.orders:order_id;shop.lines:order_id,line_no`).",
    kind=Text("`table:col,col;...`"),
)

SINK_TABLE_ID_FIELDS: Option[str | None] = Option(
    "sink.table-id.fields",
    None,
    WRITE,
    "Multi-table write (required): each table's columns, its key included, as for the key fields; the value "
    "envelope holds these.",
    kind=Text("`table:col,col;...`"),
)

SINK_TABLE_ID_TO_TOPIC_MAPPING: Option[str | None] = Option(
    "sink.tableId-to-topic.mapping",
    None,
    WRITE,
    "Multi-table write: `selector:topic;selector:topic`, the first matching rule picks a table's topic (Flink "
    "CDC's selectors: `.` separates the id's parts, each a regular expression; `,` lists several). Option "
    "`topic` sends every table to one topic.",
    kind=Text("`selector:topic;...`"),
    note="the table id",
)

SINK_ADD_TABLE_ID_TO_HEADER_ENABLED = Option(
    "sink.add-tableId-to-header-enabled",
    "false",
    WRITE,
    "Multi-table write: add the record headers `namespace`, `schemaName`, `tableName` (empty when the id has "
    "no such part).",
    kind=Flag(),
)

SINK_CUSTOM_HEADER: Option[str | None] = Option(
    "sink.custom-header",
    None,
    WRITE,
    "Multi-table write: headers added to every record, `key1:value1;key2:value2` (`,` separates too).",
    kind=Text("`key:value;...`"),
)

SINK_WRITE_ID: Option[str | None] = Option(
    "sink.write-id",
    None,
    WRITE,
    "Exactly-once batch writes: a name for this write that stays the same when the job is run again after a "
    "failure; tasks a failed run committed are then recognised and not written twice (the rerun must split "
    "its rows into the same tasks, which is checked). Without it every batch write is a new write.",
    kind=Text("name"),
)

WRITE_OPTIONS: tuple[Option[Any], ...] = (
    SINK_PARTITIONER,
    SINK_BUFFER_FLUSH_MAX_ROWS,
    SINK_BUFFER_FLUSH_INTERVAL,
    SINK_UPSERT_VERSION,
    SINK_DELIVERY_GUARANTEE,
    SINK_TRANSACTIONAL_ID_PREFIX,
    SINK_PARALLELISM,
    SINK_TABLE_ID_COLUMN,
    SINK_TABLE_ID_KEY_FIELDS,
    SINK_TABLE_ID_FIELDS,
    SINK_TABLE_ID_TO_TOPIC_MAPPING,
    SINK_ADD_TABLE_ID_TO_HEADER_ENABLED,
    SINK_CUSTOM_HEADER,
    SINK_WRITE_ID,
)
