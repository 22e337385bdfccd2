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
    # The value the option takes when not given (the parsers read it with default_of); "required", or words in
    # backticks or prose, where there is no one value; None: no default.
    default: str | None
    applies: str
    meaning: str
    aliases: tuple[str, ...] = ()
    streaming_default: str | None = None  # where a streaming read takes another
    note: str = ""  # what the default means, shown after it

    @property
    def shown(self) -> str:
        """The default as the README's option table shows it."""
        if self.streaming_default is not None:
            return f"{self.default} (batch), {self.streaming_default} (streaming)"
        return f"{self.default} ({self.note})" if self.note else self.default or ""


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
        "properties.*",
        None,
        BOTH,
        "Passed to the librdkafka client (e.g. `properties.security.protocol`); `kafka.*` is accepted too.",
    ),
)

# Options of reads only (issue: the complete reader).
READ_OPTIONS: tuple[OptionDoc, ...] = (
    OptionDoc(
        "topic-pattern",
        None,
        BOTH,
        "Read every topic whose whole name matches this regular expression (instead of `topic`); a write "
        "takes each row's topic from its `topic` metadata column and refuses names that do not match.",
        ("subscribePattern",),
    ),
    OptionDoc(
        "assign",
        None,
        READ,
        'Read only these partitions, as JSON `{"orders":[0,1],"payments":[2]}` (Spark\'s `assign`; instead of '
        "`topic` / `topic-pattern`); a stream never adds partitions to them. A table read of some partitions is exact "
        "for the keys they hold, since every record of a key is in the partition its key picks (as the Java client "
        "and this connector's writes partition).",
    ),
    OptionDoc(
        "read.mode",
        "table",
        READ,
        "`table`: the latest value per key, deleted keys removed. `changelog`: one row per record.",
        streaming_default="changelog",
    ),
    OptionDoc(
        "changelog.compact",
        "false",
        READ,
        "In changelog mode, keep only the last change per key of each read or micro-batch (not combined with "
        "splitting).",
    ),
    OptionDoc(
        "scan.table.memory-budget",
        "256 mb",
        BOTH,
        "Table mode and `changelog.compact` (and save mode overwrite's scan of the live keys): about the most "
        "memory a task's latest records per key take in its Python worker (Python, the Kafka client's fetch queue "
        "and a chunk of records in flight come on top). Beyond a quarter of it (the rest is working room) they are "
        "sorted by key and spilled to local disk as Arrow files (Spark's local dir, else the system's temp dir), "
        "which are merged at the end. A size: `256 mb`, `1 gb`, `64m`, `512 kb` (bytes without a unit).",
    ),
    OptionDoc(
        "scan.startup.mode",
        "earliest-offset",
        READ,
        "Where to start: `earliest-offset`, `latest-offset`, `group-offsets` (committed offsets of "
        "`properties.group.id`; a partition without one falls back to `properties.auto.offset.reset`), "
        "`timestamp`, `specific-offsets`.",
    ),
    OptionDoc("scan.startup.timestamp-millis", None, READ, "Start of the `timestamp` mode, epoch milliseconds."),
    OptionDoc(
        "scan.startup.specific-offsets",
        None,
        READ,
        "Start of the `specific-offsets` mode: `partition:0,offset:42;partition:1,offset:300`; unlisted "
        "partitions start at the earliest offset.",
    ),
    OptionDoc(
        "startingOffsets",
        None,
        READ,
        'Spark\'s form of the start: `earliest`, `latest` or JSON `{"t":{"0":23,"1":-2}}` (-2 earliest, -1 latest).',
    ),
    OptionDoc(
        "startingTimestamp",
        None,
        READ,
        "Spark's form of `scan.startup.mode=timestamp`, epoch ms; a partition with no record at or after it follows "
        "`startingOffsetsByTimestampStrategy`.",
    ),
    OptionDoc(
        "startingOffsetsByTimestamp",
        None,
        READ,
        'Spark\'s start by timestamp per partition, JSON `{"t":{"0":1700000000000}}` (epoch ms); unlisted '
        "partitions start at the earliest offset (Spark requires every partition listed); a partition with no "
        "record at or after its timestamp follows `startingOffsetsByTimestampStrategy`.",
    ),
    OptionDoc(
        "startingOffsetsByTimestampStrategy",
        "error",
        READ,
        "Spark's: what `startingTimestamp` / `startingOffsetsByTimestamp` do where a partition has no record at or "
        "after the timestamp: `error` fails naming the partitions, `latest` starts them at their latest offset "
        "(Flink's `scan.startup.mode=timestamp` always does the latter).",
    ),
    OptionDoc(
        "scan.bounded.mode",
        "latest-offset",
        READ,
        "Where to stop: `latest-offset` (the end when the query starts), `group-offsets`, `timestamp`, "
        "`specific-offsets`.",
        streaming_default="none",
    ),
    OptionDoc("scan.bounded.timestamp-millis", None, READ, "End of the `timestamp` mode, epoch milliseconds."),
    OptionDoc(
        "scan.bounded.specific-offsets",
        None,
        READ,
        "End of the `specific-offsets` mode, as for the start; as in Flink, nothing is read of an unlisted "
        "partition (Spark's `endingOffsets` JSON ends unlisted partitions at the latest offset instead).",
    ),
    OptionDoc("endingOffsets", None, READ, "Spark's form of the end: `latest` or JSON as for `startingOffsets`."),
    OptionDoc("endingTimestamp", None, READ, "Spark's form of `scan.bounded.mode=timestamp`, epoch ms."),
    OptionDoc(
        "endingOffsetsByTimestamp",
        None,
        READ,
        "Spark's end by timestamp per partition, JSON as for `startingOffsetsByTimestamp`; unlisted partitions, "
        "and those with no record at or after their timestamp, end at the latest offset.",
    ),
    OptionDoc(
        "scan.max-records-per-batch",
        None,
        READ,
        "Streaming: about this many offsets per micro-batch, shared across partitions in proportion to their "
        "backlog (each partition with a backlog gets at least one, as Spark's `maxOffsetsPerTrigger`).",
        ("maxOffsetsPerTrigger",),
    ),
    OptionDoc(
        "minOffsetsPerTrigger",
        None,
        READ,
        "Streaming, as Spark's: no new micro-batch while fewer than this many offsets are available (over all "
        "partitions), until `maxTriggerDelay` has passed since the last batch; the first trigger of a run always "
        "goes. Ignored under `Trigger.AvailableNow`. With `maxOffsetsPerTrigger` too, Spark is handed the "
        "maximum and the reader keeps the minimum (PySpark has no composite read limit).",
    ),
    OptionDoc(
        "maxTriggerDelay",
        "15m",
        READ,
        "Streaming, with `minOffsetsPerTrigger` only: the longest a micro-batch is held back for want of "
        "records, a Spark time string (`15m`, `30s`, `500ms`).",
    ),
    OptionDoc(
        "scan.split.max-records",
        None,
        READ,
        "Changelog mode: split a partition's range into slices of at most this many offsets, one task each.",
        ("maxRecordsPerPartition",),
    ),
    OptionDoc(
        "minPartitions",
        None,
        READ,
        "Changelog mode: split ranges (in proportion to their size) until there are at least this many tasks.",
    ),
    OptionDoc(
        "scan.coalesce.max-records",
        "20000",
        READ,
        "Streaming: a micro-batch's partition ranges are read by one Spark task together while their offsets add "
        "up to at most this many, so that a micro-batch of a few records does not pay a task per partition (a "
        "task's fixed cost dominates a small micro-batch's latency); a larger range is a task of its own. `0`: a "
        "task per partition range, as Spark's `kafka` source. Not applied with `scan.split.max-records` or "
        "`minPartitions`, nor under `Trigger.AvailableNow` (a bounded backlog, read with a task per range as a "
        "batch read is).",
    ),
    OptionDoc(
        "scan.filter.key-partitions",
        "true",
        READ,
        "Batch reads with `spark.sql.python.filterPushdown.enabled=true`: a filter giving every key column with "
        "`=` or `IN` reads only the partitions those keys hash to (murmur2 of this key format's bytes, as the "
        "writer, Flink and the Java client partition). `false` for a topic whose keys were partitioned otherwise "
        "(another partitioner or key encoding, or partitions added since). Filters on the `topic`, `partition`, "
        "`offset` and `timestamp` metadata columns narrow the read too; every filter is still applied by Spark.",
    ),
    OptionDoc(
        "groupIdPrefix",
        "pyspark-upsert-kafka",
        READ,
        "Spark's: the group id the range consumers give librdkafka (which requires one); they never join the group "
        "nor commit to it, so it need not be unique. `properties.group.id` (`kafka.group.id`), which names the "
        "group of `group-offsets` and of the streaming commits, replaces it.",
    ),
    OptionDoc(
        "scan.fail-on-data-loss",
        "true",
        READ,
        "Fail when offsets to read were deleted (retention, topic recreated); false skips them with a warning.",
        ("failOnDataLoss",),
    ),
    OptionDoc(
        "scan.topic-partition-discovery.interval",
        "5 min",
        READ,
        "Streaming: how often new partitions and topics matching `topic-pattern` are looked for.",
    ),
    OptionDoc(
        "scan.watermark.idle-timeout",
        None,
        READ,
        "A partition with no new record for this long stops holding back the merged watermark.",
    ),
    OptionDoc(
        "scan.watermark.alignment.max-drift",
        None,
        READ,
        "Streaming: hold each partition at the merged watermark plus this drift, so that none runs ahead of "
        "the slowest active one in record time. Whole milliseconds, at least `1 ms`.",
    ),
)

# Options of writes only (issue: the complete writer).
WRITE_OPTIONS: tuple[OptionDoc, ...] = (
    OptionDoc(
        "sink.partitioner",
        "default",
        WRITE,
        "`default`: the Java client's partitioner (murmur2 of the key bytes), so a key shares its partition with "
        "what Java and Flink producers write. Or a Python function `module:function(key_bytes, num_partitions) "
        "-> int`. `fixed` and `round-robin` are refused: they split a key over partitions.",
    ),
    OptionDoc(
        "sink.buffer-flush.max-rows",
        "0",
        WRITE,
        "The reducing buffer: keep only the last row per key, flush when this many distinct keys are buffered "
        "(set together with `sink.buffer-flush.interval`).",
        note="off",
    ),
    OptionDoc(
        "sink.buffer-flush.interval",
        "0",
        WRITE,
        "The reducing buffer: flush at least this often (`1 s`, `500 ms`); always flushed at the end of a task.",
        note="off",
    ),
    OptionDoc(
        "sink.delivery-guarantee",
        "at-least-once",
        WRITE,
        "`none` (acks=1), `at-least-once` (idempotent producer, acks=all, a task succeeds only when Kafka has "
        "every record) or `exactly-once` (one Kafka transaction per task, replays never write twice).",
        ("sink.semantic",),
    ),
    OptionDoc(
        "sink.transactional-id-prefix",
        None,
        WRITE,
        "Exactly-once (required): the prefix of each task's transactional id, "
        "`<prefix>-<query, write id or job>-<partition>`, so two queries may share a prefix (e.g. one ACL) without "
        "fencing each other; the marker consumer groups are named like the transactional ids.",
    ),
    OptionDoc(
        "sink.parallelism",
        None,
        WRITE,
        "Refused: a Spark write runs one task per DataFrame partition and a Python data source cannot ask for "
        "another distribution. `df.repartition(N, *key columns)` before the write does the same, with every key in "
        "one task.",
    ),
    OptionDoc(
        "sink.table-id.column",
        None,
        WRITE,
        "The multi-table write (Flink CDC's Kafka pipeline sink): the STRING column naming each row's table "
        "(`db.table`, or `namespace.schema.table`); each table is keyed and enveloped on its own (see Writing several "
        "tables at once). `value.format` `debezium-json` (default here) or `canal-json`, `key.format` `json` or `csv`.",
    ),
    OptionDoc(
        "sink.table-id.key-fields",
        None,
        WRITE,
        "Multi-table write (required): each table's primary key, `table:col,col;table:col` "
        "(e.g. `shop.orders:order_id;shop.lines:order_id,line_no`).",
    ),
    OptionDoc(
        "sink.table-id.fields",
        None,
        WRITE,
        "Multi-table write (required): each table's columns, its key included, as for the key fields; the value "
        "envelope holds these.",
    ),
    OptionDoc(
        "sink.tableId-to-topic.mapping",
        "the table id",
        WRITE,
        "Multi-table write: `selector:topic;selector:topic`, the first matching rule picks a table's topic (Flink "
        "CDC's selectors: `.` separates the id's parts, each a regular expression; `,` lists several). Option "
        "`topic` sends every table to one topic.",
    ),
    OptionDoc(
        "sink.add-tableId-to-header-enabled",
        "false",
        WRITE,
        "Multi-table write: add the record headers `namespace`, `schemaName`, `tableName` (empty when the id has "
        "no such part).",
    ),
    OptionDoc(
        "sink.custom-header",
        None,
        WRITE,
        "Multi-table write: headers added to every record, `key1:value1;key2:value2` (`,` separates too).",
    ),
    OptionDoc(
        "sink.write-id",
        None,
        WRITE,
        "Exactly-once batch writes: a name for this write that stays the same when the job is run again after a "
        "failure; tasks a failed run committed are then recognised and not written twice (the rerun must split "
        "its rows into the same tasks, which is checked). Without it every batch write is a new write.",
    ),
)

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
