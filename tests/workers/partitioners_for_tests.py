"""User partitioners for the `sink.partitioner` tests; Spark's Python workers import them by name, as they
would a user's module shipped with the job."""

from __future__ import annotations


def by_key_length(key: bytes, num_partitions: int) -> int:
    """A partition that depends on the key, and that no Kafka client would pick."""
    return len(key) % num_partitions


def out_of_range(key: bytes, num_partitions: int) -> int:
    return num_partitions
