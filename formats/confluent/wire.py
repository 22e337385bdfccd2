"""Confluent's wire format, the part every registry format shares (avro-confluent, json-confluent,
protobuf-confluent): magic byte 0 and a 4-byte big-endian schema id before the body; Protobuf puts its message
indexes after them."""

from __future__ import annotations

import numpy as np

from ..payloads import Layout

MAGIC = 0
HEADER = 5


def not_framed(body: str) -> str:
    """A record's failure when it does not start with the header: `body` says what should follow it."""
    return f"not in the Confluent wire format (magic byte 0 and a 4-byte schema id before {body})"


def header(schema_id: int) -> bytes:
    """The header of a record written with this schema id."""
    return bytes([MAGIC]) + schema_id.to_bytes(4, "big")


def framed_ids(layout: Layout) -> tuple[np.ndarray, np.ndarray]:
    """Per payload, column-wise: whether it starts with the header, and its schema id (meaningless where not)."""
    data, begins = layout.data, layout.begins
    framed = (layout.ends - begins >= HEADER) & (data[begins] == MAGIC)
    ids = np.zeros(len(begins), dtype=np.int64)
    for k in range(1, HEADER):  # the big-endian schema id after the magic byte (the buffer is padded)
        ids = (ids << 8) | data[begins + k]
    return framed, ids
