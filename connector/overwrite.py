"""Save mode `overwrite`: after the rows are written, the topic's table must equal the DataFrame, so every
key that is live in the topic (its latest record has a value) but absent from the DataFrame gets a tombstone.

Runs on the driver in the writer's commit, once every task has reported the encoded keys it wrote. Keys are
compared as bytes, as Kafka's compaction compares them: a key written by another producer with a different
encoding of the same fields is a different key. The tombstones go out at-least-once (writing one twice is
harmless: the key is absent either way).

Memory: the live keys are found one partition at a time by the table reader's reducer (read/live_keys.py, through
read/latest_per_key.py: the latest record per key in Arrow, spilled to local disk beyond scan.table.memory-budget),
so the driver never holds every key of the topic. What it does hold: the keys the tasks wrote, which reach the
commit in the tasks' messages all at once (kept as Arrow arrays, deduplicated per topic, not as a Python set), and
while a block of live keys is compared with them, Arrow's hash set of them.

Here, above read/ and write/: it reads the topic the way a table read does and writes tombstones the way the
writer does.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import WriterCommitMessage

from .kafka.spec import KafkaSpec
from .read.live_keys import KEYS_PER_ARRAY, live_keys
from .write.plan import WritePlan
from .write.producer import Sender
from .write.sink import UpsertKafkaWriter
from .write.task import WriteResult

log = logging.getLogger("upsert_kafka")


class UpsertKafkaOverwriter(UpsertKafkaWriter):
    """Save mode overwrite: the rows written as by append, then (on the driver, once every task committed) a
    tombstone for each live key of the target topics that no task wrote. Here, above read/ and write/, as it
    reads what the write leaves."""

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        tombstones = tombstone_missing_keys(self.plan, [m for m in messages if isinstance(m, WriteResult)])
        log.info("upsert-kafka: overwrite tombstoned %d key(s) the DataFrame lacks", tombstones)
        super().commit(messages)


def tombstone_missing_keys(plan: WritePlan, results: list[WriteResult]) -> int:
    """Tombstone the live keys of the target topics that no task wrote; returns how many."""
    spec = plan.spec
    written = written_keys(spec.topics.single, results)
    targets = sorted(set(spec.topics.names or plan.target.topics) | set(written))
    sender = Sender(spec, plan.target)
    count = 0
    try:
        for topic in targets:
            for missing in missing_keys(spec.kafka, topic, written.get(topic), spec.table_memory_budget):
                sender.produce(topic, missing, [None] * len(missing))
                count += len(missing)
        sender.finish()
    except BaseException:
        sender.fail()
        raise
    return count


def written_keys(single_topic: str | None, results: list[WriteResult]) -> dict[str, pa.Array]:
    """The distinct encoded keys the tasks wrote, per topic."""
    per_topic: dict[str, list[pa.Array]] = {}
    for result in results:
        if result.keys is None:
            continue
        if result.key_topics is None:
            assert single_topic is not None, "a write to several topics reports each key's topic"
            per_topic.setdefault(single_topic, []).append(result.keys)
            continue
        for topic in pc.unique(result.key_topics).to_pylist():
            per_topic.setdefault(topic, []).append(result.keys.filter(pc.equal(result.key_topics, topic)))
    return {t: pc.unique(pa.concat_arrays(arrays)) for t, arrays in per_topic.items()}


def missing_keys(kafka: KafkaSpec, topic: str, written: pa.Array | None, budget: int) -> Iterator[list[bytes]]:
    """The keys of `topic` whose latest record carries a value, as read_committed sees it now, less `written`:
    in blocks. The live keys come partition after partition (read.live_keys), and those of consecutive partitions
    share a block: a topic of many small partitions costs a comparison per block, not one per partition."""
    # Live keys are compared with the written ones in blocks at least as long as those: each comparison builds
    # a hash set of the written keys, so the work stays linear.
    block_rows = max(KEYS_PER_ARRAY, 0 if written is None else len(written))
    block: list[pa.Array] = []
    rows = 0
    for live in live_keys(kafka, topic, budget):
        block.append(live)
        rows += len(live)
        if rows >= block_rows:
            yield from _unwritten(block, written)
            block, rows = [], 0
    yield from _unwritten(block, written)


def _unwritten(block: list[pa.Array], written: pa.Array | None) -> Iterator[list[bytes]]:
    if not block:
        return
    keys = pa.concat_arrays(block)
    if written is not None and len(written):
        keys = keys.filter(pc.invert(pc.is_in(keys, value_set=written)))
    if len(keys):
        yield keys.to_pylist()
