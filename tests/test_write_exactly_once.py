"""`sink.delivery-guarantee` against the real broker: none and at-least-once write plainly; exactly-once writes
one transaction per task, and no record twice under task failures, retries, query restarts and replayed
micro-batches."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import orjson
import pytest
from confluent_kafka import Consumer, TopicPartition

from tests.failure_injection import fail_first_attempt
from tests.kafka_io import consume_all, produce
from tests.write_helpers import end_offsets, key_counts, write

SCHEMA = "id INT, name STRING, price DOUBLE"
CHANGES = SCHEMA + ", _change_type STRING"


def exactly_once(prefix: str) -> dict[str, str]:
    return {"sink.delivery-guarantee": "exactly-once", "sink.transactional-id-prefix": prefix}


def all_offsets(bootstrap: str, topic: str) -> int:
    return sum(end_offsets(bootstrap, topic).values())


@pytest.mark.parametrize("guarantee", ["none", "at-least-once"])
def test_none_and_at_least_once_write_every_row_without_transactions(spark, new_topic, options, bootstrap, guarantee):
    topic = new_topic()
    write(spark, options(topic, {"sink.delivery-guarantee": guarantee}), [(i, "a", 1.0) for i in range(5)], SCHEMA)

    assert key_counts(bootstrap, topic) == {i: 1 for i in range(5)}
    assert all_offsets(bootstrap, topic) == 5, "no transaction markers"


def test_unknown_delivery_guarantee_lists_the_valid_ones(spark, new_topic, options):
    opts = options(new_topic(), {"sink.delivery-guarantee": "twice"})
    with pytest.raises(Exception, match=r"'sink.delivery-guarantee' must be one of none, at-least-once, exactly-once"):
        write(spark, opts, [(1, "a", 1.0)], SCHEMA)


def test_exactly_once_without_a_transactional_id_prefix_names_the_option(spark, new_topic, options):
    opts = options(new_topic(), {"sink.delivery-guarantee": "exactly-once"})
    with pytest.raises(Exception, match=r"exactly-once needs option 'sink.transactional-id-prefix'"):
        write(spark, opts, [(1, "a", 1.0)], SCHEMA)


def test_transaction_timeout_above_the_brokers_maximum_fails_before_any_data(spark, new_topic, options, bootstrap):
    topic = new_topic()
    opts = options(topic, exactly_once(topic) | {"properties.transaction.timeout.ms": "3600000"})
    with pytest.raises(Exception, match=r"'properties.transaction.timeout.ms' \(3600000 ms\) exceeds the brokers' "):
        write(spark, opts, [(1, "a", 1.0)], SCHEMA)
    assert all_offsets(bootstrap, topic) == 0


def test_each_task_commits_its_records_and_its_marker_in_one_transaction(spark, new_topic, options, bootstrap):
    topic = new_topic(partitions=2)
    opts = options(topic, {"sink.semantic": "exactly-once", "sink.transactional-id-prefix": topic})
    spark.createDataFrame([(i, "a", float(i)) for i in range(20)], SCHEMA).repartition(2).write.format(
        "upsert-kafka"
    ).options(**opts).mode("append").save()

    assert key_counts(bootstrap, topic) == {i: 1 for i in range(20)}
    # Each task's transaction ends with a commit marker in each partition it wrote: offsets beyond the records.
    assert all_offsets(bootstrap, topic) > 20
    # ... and commits the task's write id, in the consumer group named like its transactional id.
    for task in (0, 1):
        group = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-{task}"})
        try:
            (marker,) = group.committed([TopicPartition(topic, 0)], timeout=10)
        finally:
            group.close()
        assert marker.metadata.startswith("write "), marker


def test_failed_write_leaves_no_record_for_read_committed_readers(spark, new_topic, options, bootstrap):
    topic = new_topic(**{"max.message.bytes": "2000"})
    rows = [(1, "a", 1.0), (2, "x" * 5000, 2.0), (3, "c", 3.0)]
    with pytest.raises(Exception, match=r"first failed record's key: b'\{\"id\":2\}'"):
        write(spark, options(topic, exactly_once(topic)), rows, SCHEMA)
    assert consume_all(bootstrap, topic) == []


def test_batch_write_with_failed_first_attempts_writes_every_row_exactly_once(
    spark, new_topic, options, bootstrap, tmp_path
):
    topic = new_topic(partitions=3)
    failures = tmp_path / "failures"
    failures.mkdir()
    n = 40_000
    rows = spark.range(0, n, 1, numPartitions=2).selectExpr(
        "cast(id as int) as id", "concat('name-', id) as name", "cast(id as double) as price"
    )
    # Each task's first attempt dies after 15,000 of its 20,000 rows, with records in its open transaction.
    failing = rows.withColumn("name", fail_first_attempt(bootstrap, topic, 20_000, 15_000, str(failures))("id"))
    failing.write.format("upsert-kafka").options(**options(topic, exactly_once(topic))).mode("append").save()

    assert sorted(f.name.split("-")[0] for f in failures.iterdir()) == ["open", "open"]
    assert key_counts(bootstrap, topic) == {i: 1 for i in range(n)}
    assert all_offsets(bootstrap, topic) > n + 2, "the failed attempts' records are in the log, aborted"


def test_streaming_write_under_task_failures_restarts_and_a_replayed_batch_writes_each_record_once(
    spark, new_topic, options, bootstrap, tmp_path
):
    source, target = new_topic(), new_topic(partitions=2)
    failures, checkpoint = tmp_path / "failures", tmp_path / "checkpoint"
    failures.mkdir()
    per_batch = 20_000

    def produce_range(start: int, stop: int) -> None:
        produce(
            bootstrap,
            source,
            [
                (orjson.dumps({"id": i}), orjson.dumps({"id": i, "name": f"n{i}", "price": i}))
                for i in range(start, stop)
            ],
        )

    def run() -> list[int]:
        """One run of the query to the end of the source; returns the batch ids it ran."""
        changes = (
            spark.readStream.format("upsert-kafka")
            .options(**options(source, {"scan.max-records-per-batch": str(per_batch)}))
            .schema(CHANGES)
            .load()
        )
        # The first attempt of every micro-batch's task dies after 15,000 of its 20,000 rows.
        failing = changes.withColumn(
            "name", fail_first_attempt(bootstrap, target, per_batch, 15_000, str(failures), 3)("price")
        )
        query = (
            failing.writeStream.format("upsert-kafka")
            .options(**options(target, exactly_once(target)))
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(300)
        assert query.exception() is None, query.exception()
        return sorted({p["batchId"] for p in query.recentProgress if p["numInputRows"]})

    produce_range(0, 3 * per_batch)
    assert run() == [0, 1, 2]
    # A crash after the sink committed batch 2 but before Spark logged it: the restart replays batch 2.
    for name in ("2", ".2.crc"):
        Path(checkpoint, "commits", name).unlink(missing_ok=True)
    produce_range(3 * per_batch, 4 * per_batch)
    assert run() == [2, 3]

    # Five failed first attempts: of batches 0 to 3, with records in their open transaction (unless the
    # machine was too slow to get them there in time), and of the replay of batch 2, which writes nothing.
    injected = Counter(f.name.split("-")[0] for f in failures.iterdir())
    assert sum(injected.values()) == 5 and injected["open"] >= 3, injected
    counts = key_counts(bootstrap, target)
    assert len(counts) == 4 * per_batch
    assert Counter(counts.values()) == {1: 4 * per_batch}, "some record was written twice"
