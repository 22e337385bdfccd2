"""Save mode `overwrite`: after the rows are written, the topic's table must equal the DataFrame, so every
key that is live in the topic (its latest record has a value) but absent from the DataFrame gets a tombstone.

Runs on the driver in the writer's commit, once every task has reported the encoded keys it wrote. Keys are
compared as bytes, as Kafka's compaction compares them: a key written by another producer with a different
encoding of the same fields is a different key. The tombstones go out at-least-once (writing one twice is
harmless: the key is absent either way).
"""

from __future__ import annotations

import itertools

from confluent_kafka.admin import OffsetSpec

from ..kafka import Brokers
from ..options.common import KafkaSpec
from ..read.fetch import fetch_range
from ..read.offsets import PartitionRange
from .producer import Sender
from .task import WritePlan, WriteResult


def tombstone_missing_keys(plan: WritePlan, results: list[WriteResult]) -> int:
    """Tombstone the live keys of the target topics that no task wrote; returns how many."""
    spec = plan.spec
    written: dict[str, set[bytes]] = {}
    for result in results:
        if result.keys is None:
            continue
        topics = itertools.repeat(spec.topics.single) if result.key_topics is None else result.key_topics.to_pylist()
        for topic, key in zip(topics, result.keys.to_pylist()):
            written.setdefault(topic, set()).add(key)
    targets = sorted(set(spec.topics.names or plan.target.topics) | set(written))
    sender = Sender(spec, plan.target)
    count = 0
    try:
        for topic in targets:
            missing = sorted(live_keys(spec.kafka, topic) - written.get(topic, set()))
            if missing:
                sender.produce(topic, missing, [None] * len(missing))
                count += len(missing)
        sender.finish()
    except BaseException:
        sender.fail()
        raise
    return count


def live_keys(kafka: KafkaSpec, topic: str) -> set[bytes]:
    """The keys of `topic` whose latest record carries a value, as read_committed sees it now."""
    brokers = Brokers(kafka)
    partitions = brokers.topic_partitions(topic)
    start = brokers.list_offsets({topic: partitions}, OffsetSpec.earliest)[topic]
    end = brokers.list_offsets({topic: partitions}, OffsetSpec.latest)[topic]
    has_value: dict[bytes | None, bool] = {}
    for p in partitions:
        for chunk in fetch_range(kafka, PartitionRange(topic, p, start[p], end[p])):
            has_value.update(zip(chunk.keys, (v is not None for v in chunk.values)))
    return {k for k, live in has_value.items() if live and k is not None}
