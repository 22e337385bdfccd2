"""`sink.partitioner`: which Kafka partition a record goes to.

An upsert topic is a table only while every record of a key lands in one partition (Kafka orders a key's
records only within a partition). So the choice is by key: the Java client's default (murmur2 of the key
bytes, via librdkafka's `murmur2_random`), or a user function of the key bytes. Flink's `fixed` and
`round-robin` spread one key over partitions and are refused with that reason.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import OptionError
from ..kafka.references import load_reference

Partitioner = Callable[[bytes, int], object]  # a user function: its answer is checked to be a partition

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
