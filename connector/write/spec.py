"""Options of a write (batch or streaming), validated once into a WriteSpec.

Flink's sink options are canonical (`sink.partitioner`, `sink.buffer-flush.*`, `sink.delivery-guarantee`,
`sink.transactional-id-prefix`); its older `sink.semantic` is an alias. Nothing here talks to Kafka: what
the brokers say (topics, limits) is asked once on the driver, in target.describe_write_target.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pyspark.sql.types import StructType

from ..errors import OptionError
from ..kafka.spec import KafkaSpec, parse_kafka_spec
from ..kernel.option_kinds import OptionValues
from ..options.canonical import canonical_options
from ..options.catalog_read import SCAN_TABLE_MEMORY_BUDGET, VersionSource
from ..options.catalog_write import (
    SINK_BUFFER_FLUSH_INTERVAL,
    SINK_BUFFER_FLUSH_MAX_ROWS,
    SINK_DELIVERY_GUARANTEE,
    SINK_PARALLELISM,
    SINK_PARTITIONER,
    SINK_TRANSACTIONAL_ID_PREFIX,
    SINK_UPSERT_VERSION,
    SINK_WRITE_ID,
    DeliveryGuarantee,
)
from ..options.flink_only import sink_parallelism_message
from ..options.kafka_client import GUARANTEE_PROPERTIES, check_reserved
from ..options.layout import Layout, parse_layout
from ..options.topics import TopicSelection, parse_topic_selection
from .multi_table import MultiTableSpec, route_tables
from .partitioners import parse_partitioner

NONE, AT_LEAST_ONCE, EXACTLY_ONCE = DeliveryGuarantee  # option 'sink.delivery-guarantee'


@dataclass(frozen=True)
class BufferSpec:
    """The reducing buffer: flush when it holds max_rows distinct keys, or every interval_s."""

    max_rows: int
    interval_s: float


@dataclass(frozen=True)
class WriteSpec:
    kafka: KafkaSpec
    topics: TopicSelection
    topic_column: str | None  # the `topic` metadata column naming each row's topic; None with one topic
    layout: Layout
    table_memory_budget: int  # bytes: scan.table.memory-budget (save mode overwrite's scan of the live keys)
    partitioner: str | None = None  # 'module:function'; None: the Java client's default (murmur2)
    buffer: BufferSpec | None = None
    version: VersionSource | None = None  # sink.upsert.version: the buffer keeps a key's row of the highest version
    guarantee: DeliveryGuarantee = AT_LEAST_ONCE
    transactional_id_prefix: str | None = None
    transaction_timeout_ms: int | None = None  # properties.transaction.timeout.ms, when given
    write_id: str | None = None  # sink.write-id: a batch write that a rerun completes exactly once
    tables: MultiTableSpec | None = None  # a multi-table write: its rows become these records first (write.multi_table)


def parse_write_spec(raw: Mapping[str, str], schema: StructType) -> WriteSpec:
    options = canonical_options(raw)
    routed = route_tables(options, schema)
    kafka = parse_kafka_spec(options)
    if routed is None:
        topics = parse_topic_selection(options)
        if topics.assigned is not None:
            raise OptionError(
                "option 'assign' picks partitions to read; a write partitions each row by its key: name the topic "
                "with option 'topic' instead"
            )
        layout = parse_layout(options, schema, topics.names)
        _check_one_headers_column(layout)
        parallelism = options.text(SINK_PARALLELISM)  # None: not given
        if parallelism is not None:
            raise OptionError(sink_parallelism_message(parallelism, layout.key_fields))
    else:  # the ordinary write of the records the tables' rows become
        topics, layout = routed.topics, routed.layout
    names, pattern = topics.names, topics.pattern
    guarantee = options.value(SINK_DELIVERY_GUARANTEE)
    prefix = (options.text(SINK_TRANSACTIONAL_ID_PREFIX) or "").strip() or None
    if guarantee == EXACTLY_ONCE and prefix is None:
        raise OptionError(
            "option 'sink.delivery-guarantee' exactly-once needs option 'sink.transactional-id-prefix', a prefix "
            "unique to this query or job (each task's transactional id is the prefix and its partition), "
            'e.g. .option("sink.transactional-id-prefix", "orders-to-kafka")'
        )
    if guarantee != NONE:
        for prop in GUARANTEE_PROPERTIES:
            if f"properties.{prop}" in options:
                check_reserved(prop, options[f"properties.{prop}"])
    return WriteSpec(
        kafka=kafka,
        topics=topics,
        topic_column=_topic_column(layout, names, pattern),
        layout=layout,
        table_memory_budget=options.value(SCAN_TABLE_MEMORY_BUDGET),
        partitioner=parse_partitioner(options.text(SINK_PARTITIONER)),
        buffer=_parse_buffer(options),
        version=_version(options, layout),
        guarantee=guarantee,
        transactional_id_prefix=prefix,
        transaction_timeout_ms=_transaction_timeout(options),
        write_id=_write_id(options, guarantee),
        tables=routed.spec if routed is not None else None,
    )


def _check_one_headers_column(layout: Layout) -> None:
    """A record has one set of headers: `headers` (a map) and `header-list` cannot both give it."""
    given = [c.column for c in layout.metadata if c.kind in ("headers", "header-list")]
    if len(given) > 1:
        raise OptionError(
            f"option 'metadata.columns': columns '{given[0]}' and '{given[1]}' both give the record headers of a "
            "write; keep one (header-list keeps the order and repeated keys, headers is a map)"
        )


def _topic_column(layout: Layout, names: tuple[str, ...], pattern: str | None) -> str | None:
    """The column naming each row's topic: needed with several topics, ignored with one (as in Flink)."""
    if len(names) == 1 and pattern is None:
        return None
    column = next((c.column for c in layout.metadata if c.kind == "topic"), None)
    if column is None:
        target = f"topic-pattern '{pattern}'" if pattern else f"topics {', '.join(names)}"
        raise OptionError(
            f"a write to several topics ({target}) takes each row's topic from a column: add option "
            "'metadata.columns' = 'topic' and a column `topic` STRING (or 'dest=topic' for a column `dest`)"
        )
    return column


def _parse_buffer(options: OptionValues) -> BufferSpec | None:
    rows = options.value(SINK_BUFFER_FLUSH_MAX_ROWS)
    interval = options.value(SINK_BUFFER_FLUSH_INTERVAL)  # 0 disables, as in Flink
    if rows > 0 and interval > 0:
        return BufferSpec(rows, interval)
    if rows == 0 and interval == 0:
        return None
    raise OptionError(
        f"'{SINK_BUFFER_FLUSH_MAX_ROWS.name}' and '{SINK_BUFFER_FLUSH_INTERVAL.name}' must be set to be greater than "
        "zero together to enable sink buffer flushing."
    )


def _version(options: OptionValues, layout: Layout) -> VersionSource | None:
    """Option sink.upsert.version, checked against the columns that give it."""
    version = options.value(SINK_UPSERT_VERSION)
    if version is None:
        return None
    kinds = {c.kind for c in layout.metadata}
    needs = ("timestamp",) if version.header is None else ("headers", "header-list")
    if not kinds.intersection(needs):
        column = "a `timestamp` column" if version.header is None else "a `headers` or `header-list` column"
        raise OptionError(
            f"option '{SINK_UPSERT_VERSION.name}' = {version} takes each row's version from {column}: add it to "
            f"option 'metadata.columns' (e.g. '{needs[0]}') and to the DataFrame"
        )
    return version


def _write_id(options: OptionValues, guarantee: DeliveryGuarantee) -> str | None:
    raw = options.text(SINK_WRITE_ID)
    if raw is None:
        return None
    if guarantee != EXACTLY_ONCE:
        raise OptionError(
            "option 'sink.write-id' makes a rerun of an exactly-once write skip what it already wrote: it needs "
            "option 'sink.delivery-guarantee' = exactly-once"
        )
    if not raw.strip() or "|" in raw:
        raise OptionError(f"option 'sink.write-id' must be a non-empty name without '|', got '{raw}'")
    return raw.strip()


def _transaction_timeout(options: Mapping[str, str]) -> int | None:
    raw = options.get("properties.transaction.timeout.ms")
    if raw is None:
        return None
    if not raw.strip().isdigit() or int(raw) < 1000:
        raise OptionError(f"option 'properties.transaction.timeout.ms' must be at least 1000 (ms), got '{raw}'")
    return int(raw)
