"""The catalog's read options (catalog.py assembles them with the common ones)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import Any

from ..kernel.option_kinds import BOTH, READ, Choice, Count, Flag, Kind, Option, Regex, Text, must_be
from .kinds import (
    Duration,
    EpochMillis,
    FlinkOffsets,
    MemorySize,
    PartitionValues,
    SparkOffsets,
    SparkTime,
    SparkTimestamps,
    TopicValues,
)


class ReadMode(str, Enum):
    """Option read.mode: the latest row per key, or every record."""

    TABLE = "table"
    CHANGELOG = "changelog"

    def __str__(self) -> str:  # the value, on every Python (3.12 changed a mixed-in enum's format())
        return self.value


# Flink's modes of scan.startup.mode; scan.bounded.mode takes all but the first (read/bounds.py reads them).
STARTUP_MODES = ("earliest-offset", "latest-offset", "group-offsets", "timestamp", "specific-offsets")

TOPIC_PATTERN: Option[re.Pattern[str] | None] = Option(
    "topic-pattern",
    None,
    BOTH,
    "Read every topic whose whole name matches this regular expression (instead of `topic`); a write "
    "takes each row's topic from its `topic` metadata column and refuses names that do not match.",
    ("subscribePattern",),
    kind=Regex(),
)

ASSIGN: Option[str | None] = Option(
    "assign",
    None,
    READ,
    'Read only these partitions, as JSON `{"orders":[0,1],"payments":[2]}` (Spark\'s `assign`; instead of '
    "`topic` / `topic-pattern`); a stream never adds partitions to them. A table read of some partitions is exact "
    "for the keys they hold, since every record of a key is in the partition its key picks (as the Java client "
    "and this connector's writes partition).",
    kind=Text("JSON partitions"),
)

READ_MODE = Option(
    "read.mode",
    "table",
    READ,
    "`table`: the latest value per key, deleted keys removed. `changelog`: one row per record.",
    streaming_default="changelog",
    kind=Choice.of(ReadMode),
)

CHANGELOG_COMPACT = Option(
    "changelog.compact",
    "false",
    READ,
    "In changelog mode, keep only the last change per key of each read or micro-batch (not combined with splitting).",
    kind=Flag(),
)


@dataclass(frozen=True)
class VersionSource:
    """Where a record's version comes from (option scan.upsert.version): its timestamp, or a header's integer text."""

    header: str | None  # None: the record's timestamp

    def __str__(self) -> str:
        return "timestamp" if self.header is None else f"header:{self.header}"


@dataclass(frozen=True)
class VersionSources(Kind[VersionSource]):
    type_name: str = "`timestamp` / `header:<name>`"

    def parse(self, raw: str) -> VersionSource:
        value = raw.strip()
        if value.lower() == "timestamp":
            return VersionSource(None)
        if value.lower().startswith("header:") and value[len("header:") :].strip():
            return VersionSource(value[len("header:") :].strip())
        raise must_be("'timestamp' or 'header:<name>' (a header holding the version as integer text)", raw)


SCAN_UPSERT_VERSION: Option[VersionSource | None] = Option(
    "scan.upsert.version",
    None,
    READ,
    "A table read (`read.mode` = `table`): each key's row is the record of its highest version, not its last one; "
    "a record of a lower version is ignored, a tombstone's too (equal versions: the later record). `timestamp`: the "
    "record's timestamp; `header:<name>`: that header's value, an integer as text (a tombstone carries headers, "
    "which the writer writes from a `headers` column). A record without the header fails the read. For a stream: "
    "`normalized_changelog(..., version=...)`.",
    kind=VersionSources(),
)

SCAN_TABLE_MEMORY_BUDGET = Option(
    "scan.table.memory-budget",
    "256 mb",
    BOTH,
    "Table mode and `changelog.compact` (and save mode overwrite's scan of the live keys): about the most "
    "memory a task's latest records per key take in its Python worker (Python, the Kafka client's fetch queue "
    "and a chunk of records in flight come on top). Beyond a quarter of it (the rest is working room) they are "
    "sorted by key and spilled to local disk as Arrow files (Spark's local dir, else the system's temp dir), "
    "which are merged at the end. A size: `256 mb`, `1 gb`, `64m`, `512 kb` (bytes without a unit).",
    kind=MemorySize(),
)

SCAN_STARTUP_MODE = Option(
    "scan.startup.mode",
    "earliest-offset",
    READ,
    "Where to start: `earliest-offset`, `latest-offset`, `group-offsets` (committed offsets of "
    "`properties.group.id`; a partition without one falls back to `properties.auto.offset.reset`), "
    "`timestamp`, `specific-offsets`.",
    kind=Choice(STARTUP_MODES),
)

SCAN_STARTUP_TIMESTAMP_MILLIS: Option[int | None] = Option(
    "scan.startup.timestamp-millis",
    None,
    READ,
    "Start of the `timestamp` mode, epoch milliseconds.",
    kind=EpochMillis(),
)

SCAN_STARTUP_SPECIFIC_OFFSETS: Option[PartitionValues | None] = Option(
    "scan.startup.specific-offsets",
    None,
    READ,
    "Start of the `specific-offsets` mode: `partition:0,offset:42;partition:1,offset:300`; unlisted "
    "partitions start at the earliest offset.",
    kind=FlinkOffsets(),
)

STARTING_OFFSETS: Option[str | TopicValues | None] = Option(
    "startingOffsets",
    None,
    READ,
    'Spark\'s form of the start: `earliest`, `latest` or JSON `{"t":{"0":23,"1":-2}}` (-2 earliest, -1 latest).',
    kind=SparkOffsets(),
)

STARTING_TIMESTAMP: Option[int | None] = Option(
    "startingTimestamp",
    None,
    READ,
    "Spark's form of `scan.startup.mode=timestamp`, epoch ms; a partition with no record at or after it follows "
    "`startingOffsetsByTimestampStrategy`.",
    kind=EpochMillis(),
)

STARTING_OFFSETS_BY_TIMESTAMP: Option[TopicValues | None] = Option(
    "startingOffsetsByTimestamp",
    None,
    READ,
    'Spark\'s start by timestamp per partition, JSON `{"t":{"0":1700000000000}}` (epoch ms); unlisted '
    "partitions start at the earliest offset (Spark requires every partition listed); a partition with no "
    "record at or after its timestamp follows `startingOffsetsByTimestampStrategy`.",
    kind=SparkTimestamps(),
)

STARTING_OFFSETS_BY_TIMESTAMP_STRATEGY = Option(
    "startingOffsetsByTimestampStrategy",
    "error",
    READ,
    "Spark's: what `startingTimestamp` / `startingOffsetsByTimestamp` do where a partition has no record at or "
    "after the timestamp: `error` fails naming the partitions, `latest` starts them at their latest offset "
    "(Flink's `scan.startup.mode=timestamp` always does the latter).",
    kind=Choice(("error", "latest")),
)

SCAN_BOUNDED_MODE = Option(
    "scan.bounded.mode",
    "latest-offset",
    READ,
    "Where to stop: `latest-offset` (the end when the query starts), `group-offsets`, `timestamp`, `specific-offsets`.",
    note="batch; a stream is unbounded",
    kind=Choice(STARTUP_MODES[1:]),  # a read cannot stop at the earliest offset
)

SCAN_BOUNDED_TIMESTAMP_MILLIS: Option[int | None] = Option(
    "scan.bounded.timestamp-millis",
    None,
    READ,
    "End of the `timestamp` mode, epoch milliseconds.",
    kind=EpochMillis(),
)

SCAN_BOUNDED_SPECIFIC_OFFSETS: Option[PartitionValues | None] = Option(
    "scan.bounded.specific-offsets",
    None,
    READ,
    "End of the `specific-offsets` mode, as for the start; as in Flink, nothing is read of an unlisted "
    "partition (Spark's `endingOffsets` JSON ends unlisted partitions at the latest offset instead).",
    kind=FlinkOffsets(),
)

ENDING_OFFSETS: Option[str | TopicValues | None] = Option(
    "endingOffsets",
    None,
    READ,
    "Spark's form of the end: `latest` or JSON as for `startingOffsets`.",
    kind=SparkOffsets(ending=True),
)

ENDING_TIMESTAMP: Option[int | None] = Option(
    "endingTimestamp", None, READ, "Spark's form of `scan.bounded.mode=timestamp`, epoch ms.", kind=EpochMillis()
)

ENDING_OFFSETS_BY_TIMESTAMP: Option[TopicValues | None] = Option(
    "endingOffsetsByTimestamp",
    None,
    READ,
    "Spark's end by timestamp per partition, JSON as for `startingOffsetsByTimestamp`; unlisted partitions, "
    "and those with no record at or after their timestamp, end at the latest offset.",
    kind=SparkTimestamps(),
)

SCAN_MAX_RECORDS_PER_BATCH: Option[int | None] = Option(
    "scan.max-records-per-batch",
    None,
    READ,
    "Streaming: about this many offsets per micro-batch, shared across partitions in proportion to their "
    "backlog (each partition with a backlog gets at least one, as Spark's `maxOffsetsPerTrigger`).",
    ("maxOffsetsPerTrigger",),
    kind=Count(1),
)

MIN_OFFSETS_PER_TRIGGER: Option[int | None] = Option(
    "minOffsetsPerTrigger",
    None,
    READ,
    "Streaming, as Spark's: no new micro-batch while fewer than this many offsets are available (over all "
    "partitions), until `maxTriggerDelay` has passed since the last batch; the first trigger of a run always "
    "goes. Ignored under `Trigger.AvailableNow`. With `maxOffsetsPerTrigger` too, Spark is handed the "
    "maximum and the reader keeps the minimum (PySpark has no composite read limit).",
    kind=Count(1),
)

MAX_TRIGGER_DELAY = Option(
    "maxTriggerDelay",
    "15m",
    READ,
    "Streaming, with `minOffsetsPerTrigger` only: the longest a micro-batch is held back for want of "
    "records, a Spark time string (`15m`, `30s`, `500ms`).",
    kind=SparkTime(),
)

SCAN_SPLIT_MAX_RECORDS: Option[int | None] = Option(
    "scan.split.max-records",
    None,
    READ,
    "Changelog mode: split a partition's range into slices of at most this many offsets, one task each.",
    ("maxRecordsPerPartition",),
    kind=Count(1),
)

MIN_PARTITIONS: Option[int | None] = Option(
    "minPartitions",
    None,
    READ,
    "Changelog mode: split ranges (in proportion to their size) until there are at least this many tasks.",
    kind=Count(1),
)

SCAN_COALESCE_MAX_RECORDS = Option(
    "scan.coalesce.max-records",
    "20000",
    READ,
    "Small partition ranges are read by one Spark task together, up to this many offsets a task, so that a "
    "read of many small partitions does not pay a task per partition (a task's fixed cost dominates a small "
    "read); a larger range is a task of its own. Batch reads and `Trigger.AvailableNow` make tasks of "
    "near-equal records, at least 8 (a task per range when fewer); a running stream packs a micro-batch's "
    "ranges in order. `0`: a task per partition range, as Spark's `kafka` source. Not applied with "
    "`scan.split.max-records` or `minPartitions`.",
    kind=Count(),
)

SCAN_FILTER_KEY_PARTITIONS = Option(
    "scan.filter.key-partitions",
    "true",
    READ,
    "Batch reads with `spark.sql.python.filterPushdown.enabled=true`: a filter giving every key column with "
    "`=` or `IN` reads only the partitions those keys hash to (murmur2 of this key format's bytes, as the "
    "writer, Flink and the Java client partition). `false` for a topic whose keys were partitioned otherwise "
    "(another partitioner or key encoding, or partitions added since). Filters on the `topic`, `partition`, "
    "`offset` and `timestamp` metadata columns narrow the read too; every filter is still applied by Spark.",
    kind=Flag(),
)

GROUP_ID_PREFIX = Option(
    "groupIdPrefix",
    "pyspark-upsert-kafka",
    READ,
    "Spark's: the group id the range consumers give librdkafka (which requires one); they never join the group "
    "nor commit to it, so it need not be unique. `properties.group.id` (`kafka.group.id`), which names the "
    "group of `group-offsets` and of the streaming commits, replaces it.",
    kind=Text("name"),
)

SCAN_FAIL_ON_DATA_LOSS = Option(
    "scan.fail-on-data-loss",
    "true",
    READ,
    "Fail when offsets to read were deleted (retention, topic recreated); false skips them with a warning.",
    ("failOnDataLoss",),
    kind=Flag(),
)

SCAN_COMPACTION_LOST_DELETES = Option(
    "scan.compaction-lost-deletes",
    "fail",
    READ,
    "Streaming, compacted topics: what a micro-batch does when the log cleaner may have removed tombstones it "
    "has not read yet (its partition's records became cleanable `delete.retention.ms` ago or longer, or the "
    "topic's configuration cannot be read): `fail` names the partitions and the ways on; `warn` logs a warning, "
    "records the partitions in the batch's offset and goes on (deleted keys may stay in tables built from it).",
    kind=Choice(("fail", "warn")),
)

SCAN_TOPIC_PARTITION_DISCOVERY_INTERVAL = Option(
    "scan.topic-partition-discovery.interval",
    "5 min",
    READ,
    "Streaming: how often new partitions and topics matching `topic-pattern` are looked for.",
    kind=Duration(),
)

SCAN_WATERMARK_IDLE_TIMEOUT: Option[float | None] = Option(
    "scan.watermark.idle-timeout",
    None,
    READ,
    "A partition with no new record for this long stops holding back the merged watermark.",
    kind=Duration(),
)

SCAN_WATERMARK_ALIGNMENT_MAX_DRIFT: Option[float | None] = Option(
    "scan.watermark.alignment.max-drift",
    None,
    READ,
    "Streaming: hold each partition at the merged watermark plus this drift, so that none runs ahead of "
    "the slowest active one in record time. Whole milliseconds, at least `1 ms`.",
    kind=Duration(),
)

READ_OPTIONS: tuple[Option[Any], ...] = (
    TOPIC_PATTERN,
    ASSIGN,
    READ_MODE,
    CHANGELOG_COMPACT,
    SCAN_UPSERT_VERSION,
    SCAN_TABLE_MEMORY_BUDGET,
    SCAN_STARTUP_MODE,
    SCAN_STARTUP_TIMESTAMP_MILLIS,
    SCAN_STARTUP_SPECIFIC_OFFSETS,
    STARTING_OFFSETS,
    STARTING_TIMESTAMP,
    STARTING_OFFSETS_BY_TIMESTAMP,
    STARTING_OFFSETS_BY_TIMESTAMP_STRATEGY,
    SCAN_BOUNDED_MODE,
    SCAN_BOUNDED_TIMESTAMP_MILLIS,
    SCAN_BOUNDED_SPECIFIC_OFFSETS,
    ENDING_OFFSETS,
    ENDING_TIMESTAMP,
    ENDING_OFFSETS_BY_TIMESTAMP,
    SCAN_MAX_RECORDS_PER_BATCH,
    MIN_OFFSETS_PER_TRIGGER,
    MAX_TRIGGER_DELAY,
    SCAN_SPLIT_MAX_RECORDS,
    MIN_PARTITIONS,
    SCAN_COALESCE_MAX_RECORDS,
    SCAN_FILTER_KEY_PARTITIONS,
    GROUP_ID_PREFIX,
    SCAN_FAIL_ON_DATA_LOSS,
    SCAN_COMPACTION_LOST_DELETES,
    SCAN_TOPIC_PARTITION_DISCOVERY_INTERVAL,
    SCAN_WATERMARK_IDLE_TIMEOUT,
    SCAN_WATERMARK_ALIGNMENT_MAX_DRIFT,
)
