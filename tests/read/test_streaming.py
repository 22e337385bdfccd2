"""Streaming read and write against the real broker, with Spark checkpoints and restarts."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from pyspark_upsert_kafka.spark_internals import ADMISSION_CONTROL

from tests.support.kafka_io import produce
from tests.support.read_helpers import Collector, wait_for

pytestmark = pytest.mark.compat  # runs on every supported pyspark (tests/compat)

CHANGES = "id INT, name STRING, price DOUBLE, _change_type STRING"


def records(ids: range, name: str) -> list[tuple[bytes, bytes]]:
    return [(orjson.dumps({"id": i}), orjson.dumps({"id": i, "name": name, "price": i / 2})) for i in ids]


def test_stream_reads_across_micro_batches_and_resumes_after_restart_exactly_once(
    spark, new_topic, options, bootstrap, tmp_path
):
    topic = new_topic(partitions=2)
    stream = spark.readStream.format("upsert-kafka").options(**options(topic)).schema(CHANGES).load()
    checkpoint = str(tmp_path / "checkpoint")
    first = Collector()
    query = (
        stream.writeStream.foreachBatch(first)
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime="500 milliseconds")
        .start()
    )
    try:
        produce(bootstrap, topic, records(range(0, 10), "a"))
        wait_for(lambda: len(first.rows) >= 10, "the first 10 records")
        produce(bootstrap, topic, [*records(range(10, 20), "b"), (b'{"id":3}', None)])
        wait_for(lambda: len(first.rows) >= 21, "the next 11 records")
    finally:
        query.stop()
    assert len(set(first.batches)) >= 2, "expected the records to arrive in several micro-batches"

    produce(bootstrap, topic, records(range(20, 25), "c"))
    second = Collector()
    # pyspark 4.0/4.1 run AvailableNow as one micro-batch, and a restart that finds a batch planned but not
    # committed runs only that one (README, Spark versions): there, runs until one reads nothing.
    for _ in range(1 if ADMISSION_CONTROL else 6):
        seen = len(second.rows)
        stream.writeStream.foreachBatch(second).option("checkpointLocation", checkpoint).trigger(
            availableNow=True
        ).start().awaitTermination()
        if len(second.rows) == seen:
            break

    # A batch the first run processed but had not committed is replayed after the restart with the same
    # id and the same rows; every later batch holds only new records.
    replayed = [b for b in second.batches if b in first.by_batch]
    assert all(second.by_batch[b] == first.by_batch[b] for b in replayed)
    every_batch = {**first.by_batch, **second.by_batch}
    rows = [row for b in sorted(every_batch) for row in every_batch[b]]
    assert sorted(r[0] for r in rows if r[3] == "upsert") == list(range(25))
    assert [r for r in rows if r[3] == "delete"] == [(3, None, None, "delete")]
    new_rows = [row for b in second.batches if b not in first.by_batch for row in second.by_batch[b]]
    assert sorted(r[0] for r in new_rows) == list(range(20, 25)), "the restart must resume, not re-read"

    # The checkpointed offset is Spark's Kafka form, canonical, with the next offset per partition, after
    # the way the batch was planned (connector/read/offsets.py).
    offsets_dir = Path(checkpoint) / "offsets"
    last = max(offsets_dir.iterdir(), key=lambda p: int(p.name) if p.name.isdigit() else -1)
    stored = last.read_text().strip().splitlines()[-1]
    parsed = json.loads(stored)
    assert list(parsed) == ["@format", "@plan", "@uncleaned", topic] and list(parsed[topic]) == ["0", "1"]
    assert list(parsed["@uncleaned"]) == [topic] and list(parsed["@uncleaned"][topic]) == ["0", "1"]
    # Under AvailableNow a bounded read's grouping (balanced tasks, a floor of them: issue 31); pyspark 4.0/4.1
    # run AvailableNow as one plain micro-batch of a Python source (README, Spark versions), planned as any other.
    bounded = {"coalesce": 20000, "min-tasks": 8}
    assert parsed["@plan"] == ({"split": bounded} if ADMISSION_CONTROL else {"split": {"coalesce": 20000}})
    assert sum(parsed[topic].values()) == 26
    assert stored == json.dumps(parsed)  # key order as we emit it; Spark compares the text


def test_changelog_stream_written_back_unchanged_gives_the_same_table(spark, new_topic, options, bootstrap, tmp_path):
    source, target = new_topic(partitions=2), new_topic(partitions=3)
    produce(bootstrap, source, [*records(range(6), "a"), (b'{"id":2}', None), *records(range(4, 5), "z")])

    query = (
        spark.readStream.format("upsert-kafka")
        .options(**options(source))
        .schema(CHANGES)
        .load()
        .writeStream.format("upsert-kafka")
        .options(**options(target))
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    assert query.exception() is None

    def table(topic: str) -> list[tuple]:
        df = spark.read.format("upsert-kafka").options(**options(topic)).schema("id INT, name STRING, price DOUBLE")
        return sorted(tuple(r) for r in df.load().collect())

    assert table(target) == table(source) == [(0, "a", 0.0), (1, "a", 0.5), (3, "a", 1.5), (4, "z", 2.0), (5, "a", 2.5)]
