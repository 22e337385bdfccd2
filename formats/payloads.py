"""A chunk of record payloads as one byte array, each payload's bounds in it: what the column-wise readers work on
(the avro formats' bodies, the Confluent wire format's header of every registry format)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# A varint is at most 10 bytes; the buffer is padded so that reading one just past a record stays inside.
_PAD = 16


@dataclass(frozen=True)
class Layout:
    """A chunk of payloads as one byte array (padded) with each payload's bounds in it."""

    data: np.ndarray  # uint8
    begins: np.ndarray  # int64, index of each payload's first byte
    ends: np.ndarray  # int64, one past its last byte

    @classmethod
    def of(cls, payloads: Sequence[bytes]) -> Layout:
        lengths = np.fromiter(map(len, payloads), dtype=np.int64, count=len(payloads))
        ends = np.cumsum(lengths)
        data = np.frombuffer(b"".join(payloads) + bytes(_PAD), dtype=np.uint8)
        return cls(data, ends - lengths, ends)
