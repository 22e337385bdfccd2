"""Monitoring: how far a streaming query, or a consumer group, is behind the log end, per partition.

`lag(spark, options, checkpoint=...)` reads the latest offsets file of a query's checkpoint (the end of its
latest planned micro-batch, as this connector's stream reader wrote it: read.offsets), `group=...` a consumer
group's committed offsets (a stream with `properties.group.id` commits there, one batch behind). The partitions
and the latest offsets come from the brokers as a read with the same options sees them (read.planner): the last
stable offsets, what a read_committed reader can reach. Spark's JVM Kafka source reports the same figure as its
`minOffsetsBehindLatest` / `maxOffsetsBehindLatest` metrics (SPARK-24863); a Python source has no custom
metrics, hence this function.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from confluent_kafka.admin import OffsetSpec
from pyspark.sql import DataFrame, SparkSession

from . import spark_internals
from .errors import OptionError
from .kafka.brokers import Brokers
from .kafka.spec import parse_kafka_spec
from .options.canonical import canonical_options
from .read.offsets import Offsets, StreamOffset
from .read.planner import Partitions, lookup_partitions
from .read.spec import parse_read_topics

LAG_SCHEMA = "topic STRING, partition INT, latest_offset BIGINT, position BIGINT, lag BIGINT"


def lag(
    spark: SparkSession, options: Mapping[str, str], *, checkpoint: str | None = None, group: str | None = None
) -> DataFrame:
    """One row per topic-partition the options read: its latest offset, the position (the next offset to read,
    from the streaming query's `checkpoint` location or consumer `group`'s committed offset) and
    lag = latest_offset - position. A partition without a committed offset in the group has a null position and
    lag; one the checkpoint's query has not seen yet counts from offset 0, where the stream will start it."""
    if (checkpoint is None) == (group is None):
        raise OptionError(
            "lag() takes exactly one of checkpoint= (a streaming query's checkpointLocation) and group= (a consumer "
            "group's id)"
        )
    given = canonical_options({str(k): str(v) for k, v in options.items()})
    kafka = parse_kafka_spec(given)
    topics = parse_read_topics(given)
    if not str(checkpoint if group is None else group).strip():
        raise OptionError(f"lag(): {'checkpoint' if group is None else 'group'}= must not be empty")
    sources = None if checkpoint is None else checkpoint_sources(checkpoint)  # its local checks before the brokers'
    brokers = Brokers(kafka, **{"allow.auto.create.topics": False})  # asking never creates
    try:
        parts = lookup_partitions(brokers, topics)
        if checkpoint is not None:
            position = _fill(_source_of(checkpoint, sources or [], parts), parts)
        else:
            position = brokers.committed_offsets(str(group), parts)
        latest = brokers.list_offsets(parts, OffsetSpec.latest)
    finally:
        brokers.close()
    rows = []
    for t, ps in parts.items():
        for p in ps:
            at = position.get(t, {}).get(p)
            rows.append((t, p, latest[t][p], at, None if at is None else latest[t][p] - at))
    return spark.createDataFrame(rows, LAG_SCHEMA)


def _fill(position: Offsets, parts: Partitions) -> dict[str, dict[int, int]]:
    """A partition the query has not seen yet starts at offset 0 when it does (read.source)."""
    return {t: {p: position.get(t, {}).get(p, 0) for p in ps} for t, ps in parts.items()}


def checkpoint_sources(location: str) -> list[StreamOffset]:
    """The offset of each upsert-kafka source (the next offset to read per partition), from the latest offsets file
    of a streaming query's checkpoint (local: a path or a file: URI), as this connector's stream reader wrote them."""
    path = spark_internals.local_checkpoint(location)
    if path is None:
        raise OptionError(
            f"lag(): checkpoint '{location}' is not on a local file system, which is all lag() reads; give "
            "group= instead, with option 'properties.group.id' set on the query (it commits its offsets there)"
        )
    if not path.is_dir():
        raise OptionError(
            f"lag(): checkpoint '{location}' does not exist: give the checkpointLocation of a streaming query that "
            "reads with upsert-kafka"
        )
    batches = spark_internals.checkpoint_offset_batches(path)
    if not batches:
        raise OptionError(
            f"lag(): checkpoint '{location}' holds no micro-batch offsets (no files in '{path / 'offsets'}'): it is "
            "not a streaming query's checkpointLocation, or the query has not planned a micro-batch yet"
        )
    latest = max(batches, key=lambda p: int(p.name))
    lines = spark_internals.checkpoint_source_offsets(latest)
    if lines is None:  # fail closed: a file of another form is not guessed at
        raise OptionError(
            f"lag(): '{latest}' is not in the offset-log form this connector reads (Spark's 'v1'): this Spark writes "
            "checkpoints lag() does not know; give group= instead"
        )
    ours = [o for o in map(_source_offset, lines) if o is not None]
    if not ours:
        raise OptionError(
            f"lag(): checkpoint '{location}' was not written by an upsert-kafka stream reader (no source offset in "
            f"'{latest}' has this connector's form): give the checkpointLocation of a query reading with upsert-kafka"
        )
    return ours


def _source_of(location: str, sources: list[StreamOffset], parts: Partitions) -> Offsets:
    """The one source of the checkpoint's query that reads the options' topics: its offsets."""
    read = [o.offsets for o in sources if set(o.offsets) & set(parts)]
    if not read:
        seen = ", ".join(sorted({t for o in sources for t in o.offsets})) or "no topics"
        raise OptionError(
            f"lag(): the query of checkpoint '{location}' reads {seen}, none of the topics these options read "
            f"({', '.join(parts)}): give the options of that query"
        )
    if len(read) > 1:
        raise OptionError(
            f"lag(): the query of checkpoint '{location}' has {len(read)} upsert-kafka sources reading these topics; "
            "narrow the options' topics to one source's ('topic', 'topic-pattern' or 'assign')"
        )
    return read[0]


def _source_offset(line: str) -> StreamOffset | None:
    """A source's line of Spark's offsets file, when this connector's reader wrote it."""
    try:
        value = json.loads(line)
    except ValueError:
        return None  # "-": a source without an offset; another source's own form
    return StreamOffset.from_json(value) if StreamOffset.is_ours(value) else None
