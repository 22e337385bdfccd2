"""`sink.partitioner`: which Kafka partition a record goes to.

An upsert topic is a table only while every record of a key lands in one partition (Kafka orders a key's
records only within a partition). So the choice is by key: the Java client's default (murmur2 of the key
bytes, via librdkafka's `murmur2_random`), or a user function of the key bytes. Flink's `fixed` and
`round-robin` spread one key over partitions and are refused with that reason.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import OptionError
from ..references import load_reference

Partitioner = Callable[[bytes, int], int]

_REFUSED = {
    "fixed": "'fixed' sends all rows of a Spark task to one partition, so the records of one key written by "
    "different tasks land in different partitions",
    "round-robin": "'round-robin' spreads the records of one key over every partition",
}
_HOW = (
    "use 'default' (the Java client's murmur2 partitioner) or a Python function of the key, "
    "'module:function(key_bytes, num_partitions) -> int'"
)


def parse_partitioner(raw: str | None) -> str | None:
    """None for the default partitioner; else the 'module:function' reference, checked to import now."""
    if raw is None or raw.strip().lower() == "default":
        return None
    value = raw.strip()
    if value.lower() in _REFUSED:
        raise OptionError(
            f"option 'sink.partitioner': {_REFUSED[value.lower()]}, and Kafka keeps a key's order only within "
            f"one partition, so the topic would no longer read as a table; {_HOW}"
        )
    if ":" not in value:
        raise OptionError(
            f"option 'sink.partitioner' cannot use '{value}' (a Java partitioner class cannot run in this "
            f"connector); {_HOW}"
        )
    load_partitioner(value)
    return value


def load_partitioner(reference: str) -> Partitioner:
    """Import 'module:function'; every error names the option and what was wrong."""
    return load_reference(reference, "sink.partitioner")


def java_partition(key: bytes, partitions: int) -> int:
    """The partition the Java client's default partitioner (librdkafka's `murmur2_random`) gives a non-null
    key: murmur2 of its bytes, made positive, modulo the partition count. Written here because neither client
    library exposes it; a key look-up (read.pushdown) needs it on the driver, and tests check it against
    librdkafka's choice for many keys."""
    return (_murmur2(key) & 0x7FFFFFFF) % partitions


def _murmur2(data: bytes) -> int:
    """Kafka's `Utils.murmur2` (seed 0x9747b28c), as an unsigned 32-bit value."""
    m, mask = 0x5BD1E995, 0xFFFFFFFF
    length = len(data)
    h = (0x9747B28C ^ length) & mask
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * m) & mask
        k ^= k >> 24
        k = (k * m) & mask
        h = ((h * m) & mask) ^ k
    tail = data[whole:]
    if tail:
        for i in reversed(range(len(tail))):
            h ^= tail[i] << (8 * i)
        h = (h * m) & mask
    h ^= h >> 13
    h = (h * m) & mask
    h ^= h >> 15
    return h
