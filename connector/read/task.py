"""Executor side: one Spark task's read. Its ranges (a PartitionRange, or a RangeGroup of small ones read one after
the other) are fetched from Kafka (fetch.py) and decoded by the range decoder for the table's value format: records
keyed by their record key (record_decoder.py) or change envelopes (changes.py), as a changelog or as a table.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import InputPartition

from ..formats import ChangelogCodec
from . import versions
from .changes import ChangeRangeDecoder
from .fetch import fetch_range
from .range_calculator import PartitionRange, RangeGroup
from .range_decoder import RangeDecoder
from .record_decoder import RecordRangeDecoder
from .spec import ReadSpec


def read_range(spec: ReadSpec, rng: InputPartition) -> Iterator[pa.RecordBatch]:
    """The task's rows as Arrow batches in the table's schema."""
    if isinstance(rng, RangeGroup):
        return itertools.chain.from_iterable(read_range(spec, r) for r in rng.ranges)
    if not isinstance(rng, PartitionRange):
        return iter(())  # Spark's stand-in InputPartition(None) for a plan with no ranges
    decoder = range_decoder(spec, rng)
    kinds = tuple(c.kind for c in spec.layout.metadata)
    if spec.version is not None and versions.metadata_kind(spec.version) not in kinds:
        kinds += (versions.metadata_kind(spec.version),)
    chunks = fetch_range(spec.kafka, rng, kinds, spec.fail_on_data_loss)
    return decoder.changelog(chunks) if spec.changelog else decoder.table(chunks)


def range_decoder(spec: ReadSpec, rng: PartitionRange) -> RangeDecoder:
    """Records keyed by their record key, or change envelopes (a changelog value format: read.changes)."""
    if isinstance(spec.layout.value_codec, ChangelogCodec):
        return ChangeRangeDecoder(spec, rng)
    return RecordRangeDecoder(spec, rng)
