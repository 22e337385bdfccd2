"""Filters a batch read narrows its offset ranges with (the Data Source API's `pushFilters`).

Narrowing only leaves out records that no row of the result can come from, and every filter also stays with
Spark, which evaluates it on the rows as before. So the result is the same with pushdown on or off; only what
is fetched changes:

- the `topic` and `partition` metadata columns select the partitions read (any read mode: a key's records
  are all in one partition);
- the key columns, when every one is compared with `=` or `IN`, select the partitions those keys hash to, as
  the writer sends them (murmur2 of the key format's bytes). This assumes the topic's records were written
  with the Java client's default partitioner and this key format's exact bytes, and that the partition count
  has not changed since; option `scan.filter.key-partitions=false` turns it off;
- the `offset` column (bounds) and a lower bound on the `timestamp` column (the broker's offsets-for-times:
  every record before the offset it returns is older) narrow each partition's range, in a changelog read
  only: a table's rows are the latest record per key, which a narrower range would change.

Spark hands a reader `pushFilters` only with `spark.sql.python.filterPushdown.enabled=true` (pyspark 4.1+); see
`spark_internals.pushdown_enabled`.
"""

from __future__ import annotations

import datetime
import itertools
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

import pyarrow as pa
import pyspark.sql.datasource as ds  # its Filter classes exist from pyspark 4.1 (spark_internals.FILTER_PUSHDOWN)
from confluent_kafka.admin import OffsetSpec

from ..kafka.partitioner import java_partition
from .offsets import Offsets
from .planner import Partitions, Planner
from .spec import ReadSpec

log = logging.getLogger("upsert_kafka")

# At most this many key combinations (the product of the key columns' IN lists) are hashed; beyond it, every
# partition is read.
MAX_KEYS = 10_000
# Key formats whose bytes for a key are a function of the key alone (a registry format's carry a schema id).
_KEYED_FORMATS = frozenset({"json", "csv", "raw", "avro"})


@dataclass
class Narrowing:
    """What the pushed filters allow: None where they say nothing. Bounds are inclusive."""

    topics: set[str] | None = None
    partitions: set[int] | None = None
    partition_bounds: tuple[int | None, int | None] = (None, None)
    key_values: dict[str, tuple[object, ...]] = field(default_factory=dict)  # key column -> the values it may have
    offset_bounds: tuple[int | None, int | None] = (None, None)
    min_timestamp_ms: int | None = None

    def allows(self, topic: str, partition: int) -> bool:
        low, high = self.partition_bounds
        return (
            (self.topics is None or topic in self.topics)
            and (self.partitions is None or partition in self.partitions)
            and (low is None or partition >= low)
            and (high is None or partition <= high)
        )


def narrowing(spec: ReadSpec, filters: Iterable[ds.Filter]) -> Narrowing:
    """The narrowing the filters give; filters it cannot use are passed over (Spark evaluates them all)."""
    columns = {c.column: c.kind for c in spec.layout.metadata if c.value_key is None}
    keys = set(spec.layout.key_fields) if _keyed(spec) else set()
    out = Narrowing()
    for f in filters:
        path: tuple[str, ...] = getattr(f, "attribute", ())
        if len(path) != 1:
            continue
        name = path[0]
        kind = columns.get(name)
        values = _values(f)
        if name in keys and values is not None:
            values = tuple(v for v in values if v is not None)  # a null key is never read
            previous = out.key_values.get(name)
            out.key_values[name] = values if previous is None else tuple(v for v in previous if v in values)
        elif kind == "topic" and values is not None:
            names = {v for v in values if isinstance(v, str)}
            out.topics = names if out.topics is None else out.topics & names
        elif kind == "partition" and values is not None:
            numbers = {v for v in values if isinstance(v, int)}
            out.partitions = numbers if out.partitions is None else out.partitions & numbers
        elif kind == "partition":
            out.partition_bounds = _bounds(out.partition_bounds, f)
        elif kind == "offset" and spec.changelog and not spec.compact:
            out.offset_bounds = _bounds(out.offset_bounds, f)
        elif kind == "timestamp" and spec.changelog and not spec.compact:
            low = _timestamp_lower_bound(f)
            if low is not None:
                out.min_timestamp_ms = max(low, out.min_timestamp_ms or low)
    if set(out.key_values) != set(spec.layout.key_fields):
        out.key_values = {}  # a key partitions only as a whole
    return out


def key_partitions(spec: ReadSpec, narrow: Narrowing, counts: dict[str, int]) -> dict[str, set[int]] | None:
    """Per topic, the partitions the looked-up keys hash to; None when the filters name no whole key (or
    too many, or values the key columns cannot hold)."""
    if not narrow.key_values:
        return None
    fields = spec.layout.key_fields
    combos = list(itertools.islice(itertools.product(*(narrow.key_values[f] for f in fields)), MAX_KEYS + 1))
    if len(combos) > MAX_KEYS:
        return None
    schema = spec.layout.key_schema
    try:
        batch = pa.RecordBatch.from_arrays(
            [pa.array([c[i] for c in combos], type=schema.field(i).type) for i in range(len(fields))], schema=schema
        )
        encoded = spec.layout.key_codec.encoder(schema).encode(batch)
    except (pa.ArrowException, ValueError, TypeError, OverflowError):
        return None  # e.g. `id = 'x'` on an INT key: Spark's own filter finds nothing, narrowing nothing
    return {topic: {java_partition(key, count) for key in encoded} for topic, count in counts.items()}


def narrow_plan(
    spec: ReadSpec, narrow: Narrowing, planner: Planner, parts: Partitions, start: Offsets, end: Offsets
) -> tuple[dict[str, dict[int, int]], dict[str, dict[int, int]]]:
    """(start, end) of a planned batch read narrowed by the pushed filters; a partition left out ends where it
    starts."""
    # A key's partition depends on the topic's whole partition count, not on the partitions read (`assign`).
    by_key = key_partitions(spec, narrow, planner.partition_counts(sorted(parts))) if narrow.key_values else None
    from_timestamp = None
    at = narrow.min_timestamp_ms
    if at is not None:
        planned = {t: sorted(ps) for t, ps in end.items()}
        found = planner.list_offsets(planned, lambda: OffsetSpec.for_timestamp(at))
        # No record at or after the time: nothing of the partition is kept.
        from_timestamp = {t: {p: o if o >= 0 else end[t][p] for p, o in ps.items()} for t, ps in found.items()}
    starts = {t: dict(ps) for t, ps in start.items()}
    ends = {t: dict(ps) for t, ps in end.items()}
    low, high = narrow.offset_bounds
    for topic, stops in ends.items():
        for p, stop in stops.items():
            first = starts[topic][p]
            if low is not None:
                first = max(first, low)
            if from_timestamp is not None:
                first = max(first, from_timestamp[topic][p])
            if high is not None:
                stop = min(stop, high + 1)
            if not narrow.allows(topic, p) or (by_key is not None and p not in by_key[topic]):
                stop = first
            stops[p], starts[topic][p] = stop, min(first, stop)
    before = sum(max(0, end[t][p] - start[t][p]) for t in end for p in end[t])
    after = sum(ends[t][p] - starts[t][p] for t in ends for p in ends[t])
    log.info("upsert-kafka: the pushed filters narrowed the read from %d to %d record(s)", before, after)
    return starts, ends


# -- filter values ---------------------------------------------------------------------------------------


def _keyed(spec: ReadSpec) -> bool:
    return spec.key_partition_pruning and spec.layout.key_codec.name in _KEYED_FORMATS


def _values(f: ds.Filter) -> tuple[object, ...] | None:
    if isinstance(f, ds.EqualTo):
        return (f.value,)
    if isinstance(f, ds.In):
        return tuple(f.value)
    return None


def _bounds(bounds: tuple[int | None, int | None], f: ds.Filter) -> tuple[int | None, int | None]:
    """Inclusive integer bounds narrowed by a comparison filter (others leave them)."""
    low, high = bounds
    value = getattr(f, "value", None)
    if isinstance(f, ds.In) and value and all(isinstance(v, int) for v in value):
        return _max(low, min(value)), _min(high, max(value))
    if not isinstance(value, int) or isinstance(value, bool):
        return bounds
    if isinstance(f, ds.EqualTo):
        return _max(low, value), _min(high, value)
    if isinstance(f, ds.GreaterThan):
        return _max(low, value + 1), high
    if isinstance(f, ds.GreaterThanOrEqual):
        return _max(low, value), high
    if isinstance(f, ds.LessThan):
        return low, _min(high, value - 1)
    if isinstance(f, ds.LessThanOrEqual):
        return low, _min(high, value)
    return bounds


def _max(a: int | None, b: int) -> int:
    return b if a is None else max(a, b)


def _min(a: int | None, b: int) -> int:
    return b if a is None else min(a, b)


def _timestamp_lower_bound(f: ds.Filter) -> int | None:
    """Epoch ms at or after which every row the filter keeps was written (record timestamps are whole ms)."""
    if isinstance(f, ds.In):
        stamps = [_epoch_ms(v) for v in f.value]
        known = [s for s in stamps if s is not None]
        return min(known) if known and len(known) == len(stamps) else None
    if isinstance(f, (ds.EqualTo, ds.GreaterThan, ds.GreaterThanOrEqual)):
        return _epoch_ms(f.value)  # `>` a time within a ms still keeps that ms's later microseconds
    return None


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def _epoch_ms(value: object) -> int | None:
    """The ms holding `value`; None unless a time with a zone (a naive time's zone is not known here)."""
    if not isinstance(value, datetime.datetime) or value.tzinfo is None:
        return None
    return (value - _EPOCH) // datetime.timedelta(milliseconds=1)
