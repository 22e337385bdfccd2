"""Options of a read (batch or streaming), validated once into a ReadSpec.

Flink's names are canonical; Spark's `kafka` source spellings (startingOffsets, endingOffsets,
startingTimestamp, endingTimestamp, maxOffsetsPerTrigger, minPartitions, failOnDataLoss, subscribe,
subscribePattern) are catalog options or aliases too: every value arrives here typed by its declared kind
(canonical_options), and this module adds the rules between options.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from pyspark.sql.types import StructType

from ..errors import OptionError, SchemaError
from ..formats import ChangelogCodec
from ..kafka.spec import KafkaSpec, parse_kafka_spec
from ..kernel.option_kinds import OptionValues
from ..options.canonical import canonical_options, changelog_column_name
from ..options.catalog_read import (
    CHANGELOG_COMPACT,
    GROUP_ID_PREFIX,
    MAX_TRIGGER_DELAY,
    MIN_OFFSETS_PER_TRIGGER,
    MIN_PARTITIONS,
    READ_MODE,
    SCAN_COALESCE_MAX_RECORDS,
    SCAN_COMPACTION_LOST_DELETES,
    SCAN_FAIL_ON_DATA_LOSS,
    SCAN_FILTER_KEY_PARTITIONS,
    SCAN_MAX_RECORDS_PER_BATCH,
    SCAN_SPLIT_MAX_RECORDS,
    SCAN_TABLE_MEMORY_BUDGET,
    SCAN_TOPIC_PARTITION_DISCOVERY_INTERVAL,
    SCAN_UPSERT_VERSION,
    SCAN_WATERMARK_ALIGNMENT_MAX_DRIFT,
    SCAN_WATERMARK_IDLE_TIMEOUT,
    ReadMode,
    VersionSource,
)
from ..options.layout import Layout, check_codecs, parse_layout
from ..options.topics import TopicSelection, parse_topic_selection
from .bounds import FROM_EARLIEST, UNBOUNDED, Bound, BoundKind, Fallback, check_named_topics, parse_bound


@dataclass(frozen=True)
class ReadSpec:
    kafka: KafkaSpec
    topics: TopicSelection
    layout: Layout
    changelog: bool  # False: table mode (latest value per key)
    table_memory_budget: int  # bytes: scan.table.memory-budget (table mode, changelog.compact)
    compact: bool = False  # changelog: only the last change per key of each read / micro-batch
    version: VersionSource | None = None  # table mode: a key's row is its record of the highest version
    start: Bound = FROM_EARLIEST
    end: Bound = UNBOUNDED
    max_records_per_batch: int | None = None
    min_records_per_trigger: int | None = None  # minOffsetsPerTrigger (streaming, not under AvailableNow)
    max_trigger_delay_s: float = 900.0  # maxTriggerDelay: how long minOffsetsPerTrigger may hold a batch back
    split_max_records: int | None = None
    min_partitions: int | None = None
    coalesce_max_records: int = 0  # small ranges read together by one task, up to this many offsets (0: never)
    key_partition_pruning: bool = True  # batch, filter pushdown: key look-ups read the keys' partitions only
    fail_on_data_loss: bool = True
    fail_on_lost_deletes: bool = True  # scan.compaction-lost-deletes=fail (streams of compacted topics)
    discovery_interval_s: float = 300.0
    group_id: str | None = None
    group_fallback: Fallback | None = None  # properties.auto.offset.reset for group-offsets
    watermark_idle_timeout_s: float | None = None
    alignment_max_drift_ms: int | None = None
    tracks_watermarks: bool = False


def parse_read_spec(raw: Mapping[str, str], schema: StructType, streaming: bool) -> ReadSpec:
    options = canonical_options(raw)
    kafka = _with_group_prefix(parse_kafka_spec(options), options)
    topics = parse_read_topics(options)
    mode = options.value(READ_MODE, streaming=streaming)
    if streaming and mode is ReadMode.TABLE:
        raise OptionError("option 'read.mode': a streaming read is a changelog; use read.mode=changelog")
    layout = parse_layout(options, schema, topics.names)
    if mode is ReadMode.CHANGELOG and layout.changelog_column is None:
        column = changelog_column_name(options)
        raise SchemaError(
            f"a changelog read needs the column '{column} STRING' to say whether a row is an upsert or a "
            f"delete: add it to .schema(...), or give the data columns with option 'schema' and it is "
            f"added for you"
        )
    check_codecs(layout, writing=False)
    compact = options.value(CHANGELOG_COMPACT)
    if compact and mode is not ReadMode.CHANGELOG:
        raise OptionError("option 'changelog.compact' applies to read.mode=changelog (a table is compact already)")
    version = options.value(SCAN_UPSERT_VERSION)
    if version is not None and (mode is not ReadMode.TABLE or isinstance(layout.value_codec, ChangelogCodec)):
        raise OptionError(
            f"option '{SCAN_UPSERT_VERSION.name}' orders the records of a table read (read.mode=table) of upserts; a "
            "changelog's records are every change in arrival order: for a stream, order them with "
            "normalized_changelog(..., version=...)"
        )
    start = parse_bound(options, "startup", streaming)
    end = parse_bound(options, "bounded", streaming)
    for bound in (start, end):
        check_named_topics(bound, topics, bound.option)
    if start.kind is BoundKind.NONE:
        start = FROM_EARLIEST
    if end.kind is BoundKind.NONE and not streaming:
        end = Bound(BoundKind.LATEST)  # a batch read ends where the topic ends when the query is planned
    group_id = options.get("properties.group.id")
    by_group = [w for w, b in (("startup", start), ("bounded", end)) if b.kind is BoundKind.GROUP]
    if by_group and not group_id:
        given = " and ".join(f"'scan.{w}.mode'" for w in by_group)
        raise OptionError(
            f"group-offsets needs option 'properties.group.id' naming the consumer group (option {given})"
        )
    fallback = options.get("properties.auto.offset.reset")
    if fallback is not None and fallback.lower() not in (
        "earliest",
        "latest",
        "smallest",
        "largest",
        "error",
    ):
        raise OptionError(f"option 'properties.auto.offset.reset' must be earliest or latest, got '{fallback}'")
    split = options.value(SCAN_SPLIT_MAX_RECORDS)
    min_partitions = options.value(MIN_PARTITIONS)
    if (split or min_partitions) and mode is not ReadMode.CHANGELOG:
        raise OptionError(
            "options 'scan.split.max-records' / 'minPartitions' split a partition's range across tasks, which "
            "only a changelog read allows (table mode must see a partition whole)"
        )
    if (split or min_partitions) and compact:
        raise OptionError(
            "option 'changelog.compact' keeps one change per key of a whole partition range, which "
            "'scan.split.max-records' / 'minPartitions' would cut into slices: give one or the other"
        )
    min_per_trigger, max_delay_s = _min_per_trigger(options)
    idle = options.value(SCAN_WATERMARK_IDLE_TIMEOUT)
    drift_ms = _drift_millis(options)
    watermark_column = any(c.kind == "watermark" for c in layout.metadata)
    return ReadSpec(
        kafka=kafka,
        topics=topics,
        layout=layout,
        changelog=mode is ReadMode.CHANGELOG,
        compact=compact,
        version=version,
        table_memory_budget=options.value(SCAN_TABLE_MEMORY_BUDGET),
        start=start,
        end=end,
        max_records_per_batch=options.value(SCAN_MAX_RECORDS_PER_BATCH),
        min_records_per_trigger=min_per_trigger,
        max_trigger_delay_s=max_delay_s,
        split_max_records=split,
        min_partitions=min_partitions,
        coalesce_max_records=options.value(SCAN_COALESCE_MAX_RECORDS),
        fail_on_data_loss=options.value(SCAN_FAIL_ON_DATA_LOSS),
        fail_on_lost_deletes=options.value(SCAN_COMPACTION_LOST_DELETES) == "fail",
        key_partition_pruning=options.value(SCAN_FILTER_KEY_PARTITIONS),
        discovery_interval_s=options.value(SCAN_TOPIC_PARTITION_DISCOVERY_INTERVAL),
        group_id=group_id,
        group_fallback=None
        if fallback is None
        else Fallback({"smallest": "earliest", "largest": "latest"}.get(fallback.lower(), fallback.lower())),
        watermark_idle_timeout_s=idle,
        alignment_max_drift_ms=drift_ms,
        tracks_watermarks=bool(idle or drift_ms or watermark_column),
    )


def _with_group_prefix(kafka: KafkaSpec, options: OptionValues) -> KafkaSpec:
    """Spark's groupIdPrefix: the group id of the range consumers (properties.group.id, when set, is theirs
    instead). They never join the group nor commit to it: librdkafka requires an id, brokers may log it and ACLs
    (DESCRIBE on the group, not needed) may name it."""
    prefix = options.text(GROUP_ID_PREFIX)
    if prefix is None:
        return kafka
    if "properties.group.id" in options:
        raise OptionError(
            "options 'groupIdPrefix' and 'properties.group.id' (kafka.group.id) both name the consumers' group: "
            "give one (Spark ignores the prefix when kafka.group.id is set)"
        )
    if not prefix.strip():
        raise OptionError("option 'groupIdPrefix' must not be empty, e.g. 'spark-kafka-source'")
    return replace(kafka, properties=(*kafka.properties, ("group.id", prefix.strip())))


def parse_read_topics(options: Mapping[str, str]) -> TopicSelection:
    selection = parse_topic_selection(options)
    return replace(selection, names=tuple(sorted(selection.names)))


def _min_per_trigger(options: OptionValues) -> tuple[int | None, float]:
    """Spark's minOffsetsPerTrigger and maxTriggerDelay (a Spark time string, '15m' by default), which only
    means something with it."""
    minimum = options.value(MIN_OFFSETS_PER_TRIGGER)
    if options.given(MAX_TRIGGER_DELAY) and minimum is None:
        raise OptionError(
            "option 'maxTriggerDelay' bounds how long 'minOffsetsPerTrigger' holds a micro-batch back: set "
            "'minOffsetsPerTrigger' too, or leave it out"
        )
    return minimum, options.value(MAX_TRIGGER_DELAY)


def _drift_millis(options: OptionValues) -> int | None:
    """The alignment drift in whole milliseconds, the unit of record timestamps: a drift that would round
    (below 1 ms, to 0, holds every partition back for good) is refused rather than changed."""
    name = SCAN_WATERMARK_ALIGNMENT_MAX_DRIFT.name
    drift = options.value(SCAN_WATERMARK_ALIGNMENT_MAX_DRIFT)
    if drift is None:
        return None
    millis = drift * 1000
    if millis < 1 or abs(millis - round(millis)) > 1e-6:
        raise OptionError(
            f"option '{name}' must be at least 1 ms, in whole milliseconds (record timestamps are milliseconds), "
            f"got '{options[name]}'"
        )
    return round(millis)
