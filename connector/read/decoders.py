"""Executor side: the decoder of a partition range, by the table's value format."""

from __future__ import annotations

from ..formats import ChangelogCodec
from .changes import ChangeRangeDecoder
from .decode import RecordRangeDecoder
from .offsets import PartitionRange
from .range_decoder import RangeDecoder
from .spec import ReadSpec


def range_decoder(spec: ReadSpec, rng: PartitionRange) -> RangeDecoder:
    """Records keyed by their record key, or change envelopes (a changelog value format: read.changes)."""
    if isinstance(spec.layout.value_codec, ChangelogCodec):
        return ChangeRangeDecoder(spec, rng)
    return RecordRangeDecoder(spec, rng)
