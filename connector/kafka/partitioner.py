"""The Java client's default partitioner for a keyed record, which both sides need: the writer's records go where
it puts them (librdkafka's `murmur2_random`), and a key look-up (read.pushdown) reads only the partition it gives."""

from __future__ import annotations


def java_partition(key: bytes, partitions: int) -> int:
    """The partition the Java client's default partitioner (librdkafka's `murmur2_random`) gives a non-null
    key: murmur2 of its bytes, made positive, modulo the partition count. Written here because neither client
    library exposes it; tests check it against librdkafka's choice for many keys."""
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
