"""A topic's live keys: those whose latest record carries a value, as read_committed sees it now. The entry point
of save mode overwrite (connector/overwrite.py, above read/ and write/) into the read side: it reads the topic the
way a table read does, each partition's keys reduced on their own by the table reader's reducer
(read/latest_per_key.py: the latest record per key in Arrow, spilled to local disk beyond a quarter of its budget),
so that the driver never holds every key of the topic.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc
from confluent_kafka.admin import OffsetSpec

from ..kafka.brokers import Brokers
from ..kafka.spec import KafkaSpec
from .fetch import CHUNK_RECORDS, Records, fetch_range
from .latest_per_key import KEY, OFFSET, VALUE, LatestPerKey
from .range_calculator import PartitionRange, ranges_between

log = logging.getLogger("upsert_kafka")

# The most keys one array of live_keys holds.
KEYS_PER_ARRAY = CHUNK_RECORDS


def live_keys(kafka: KafkaSpec, topic: str, budget: int) -> Iterator[pa.Array]:
    """The keys (binary) of `topic` whose latest record carries a value, as read_committed sees it now: arrays of at
    most KEYS_PER_ARRAY keys, partition after partition (partitions holding no record are not read). Each
    partition's keys are reduced on their own (offsets of two partitions do not say which record is later), in
    `budget` bytes (scan.table.memory-budget)."""
    brokers = Brokers(kafka)
    partitions = brokers.topic_partitions(topic)
    start = brokers.list_offsets({topic: partitions}, OffsetSpec.earliest)
    end = brokers.list_offsets({topic: partitions}, OffsetSpec.latest)
    for rng in ranges_between(start, end):
        yield from _live_keys(kafka, rng, budget)


def _live_keys(kafka: KafkaSpec, rng: PartitionRange, budget: int) -> Iterator[pa.Array]:
    """The keys of one partition range whose latest record there carries a value."""
    reducer = LatestPerKey(budget)  # no identify: keys are their bytes
    try:
        for chunk in fetch_range(kafka, rng):
            reducer.add(_key_table(chunk))
        for live in reducer.results(keep_deletes=False, rows=KEYS_PER_ARRAY):
            yield live[KEY].combine_chunks()
        if reducer.spilled:
            log.info(
                "upsert-kafka: overwrite: the live keys of %s outgrew a quarter of scan.table.memory-budget: "
                "spilled %d run(s) to local disk",
                rng,
                reducer.runs,
            )
    finally:
        reducer.close()


def _key_table(chunk: Records) -> pa.Table:
    """Keys, offsets and whether each record has a value (the values themselves are not needed)."""
    keys = pa.array(chunk.keys, pa.binary())
    present = pc.is_valid(pa.array(chunk.values, pa.binary()))
    table = pa.table(
        {
            KEY: keys,
            VALUE: pc.if_else(present, pa.scalar(True), pa.scalar(None, pa.bool_())),
            OFFSET: pa.array(chunk.offsets, pa.int64()),
        }
    )
    return table.filter(pc.is_valid(keys)) if keys.null_count else table
