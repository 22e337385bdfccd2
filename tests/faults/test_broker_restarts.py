"""Availability: queries ride out broker restarts (a crash with SIGKILL, a rolling upgrade's SIGTERM) without
failing, within the bound the options set (client.timeout + client.retries * client.retry-interval); a broker
that stays away longer fails the query with one clear error, after that bound and not the default one.

The broker is the fault suite's own (tests/faults/conftest.py); it is restarted on its data directory."""

from __future__ import annotations

import contextlib
import threading
import time
import uuid

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import functions as F

from tests.faults.helpers import (
    CHANGES,
    cause,
    committed_source_offsets,
    copy_stream,
    next_batch,
    produce_ids,
    produce_two_partitions,
    report,
    tally,
)
from tests.faults.hooks import block_first_attempt
from tests.support.kafka_io import DEFAULT_PATIENCE_S, create_topic, log_ends
from tests.support.read_helpers import wait_for
from tests.support.write_helpers import arrow_batch_rows

KILLS = 2  # repeated: the second outage hits a query that already rode out one
N = 3_000
PER_BATCH = 300  # records per micro-batch: 10 batches, so the kills fall in the middle of the run


@pytest.mark.parametrize("guarantee", ["at-least-once", "exactly-once"])
def test_stream_rides_out_repeated_broker_kills_without_failing_or_losing_records(
    spark, own_broker, tmp_path, guarantee
):
    servers = own_broker.bootstrap_servers
    name = f"restarts-{guarantee}-{uuid.uuid4().hex[:8]}"
    source, target = create_topic(servers, f"{name}-in", 2), create_topic(servers, f"{name}-out", 2)
    produce_two_partitions(servers, source, range(N))
    ends = log_ends(servers, source)
    checkpoint = tmp_path / "checkpoint"
    query = copy_stream(spark, servers, source, target, guarantee, checkpoint, PER_BATCH)
    outages = []
    try:
        progressed = 0
        for _ in range(KILLS):
            # Kill only after the query got going again since the last restart: every outage hits a live run.
            wait_for(
                lambda mark=progressed + 2: next_batch(checkpoint) >= mark or not query.isActive,
                "two micro-batches since the last restart",
                180,
            )
            assert query.isActive, f"the query ended before the broker was killed {KILLS} times: {query.exception()}"
            progressed = next_batch(checkpoint)
            down = time.monotonic()
            own_broker.kill()
            own_broker.restart()
            outages.append(round(time.monotonic() - down, 1))
        with contextlib.suppress(StreamingQueryException):  # asserted below, from query.exception()
            query.awaitTermination(300)
        failure = query.exception()
        assert not query.isActive, "the query did not finish within 300 s of the last restart"
        assert failure is None, f"the query failed: {cause(failure)}"
    finally:
        query.stop()

    result = tally(servers, target, range(N))
    report(
        f"broker SIGKILL x{KILLS} mid-stream, {guarantee}",
        outages_s=outages,
        micro_batches=next_batch(checkpoint),
        query_failures=0,
        figures=result.figures(),
    )
    assert committed_source_offsets(checkpoint, source) == ends
    assert result.lost == 0 and result.unexpected == 0, result
    if guarantee == "exactly-once":
        assert result.duplicated == 0, result


@pytest.mark.compat
def test_batch_read_completes_across_a_graceful_broker_restart(spark, own_broker, tmp_path):
    servers = own_broker.bootstrap_servers
    topic = create_topic(servers, f"restart-read-{uuid.uuid4().hex[:8]}", 1)
    n = 20_000
    produce_ids(servers, topic, range(n))
    df = (
        spark.read.format("upsert-kafka")
        .options(
            **{
                "properties.bootstrap.servers": servers,
                "topic": topic,
                "key.fields": "id",
                # The consumer prefetches little, so most records are fetched after the restart.
                "properties.queued.max.messages.kbytes": "16",
                "properties.max.partition.fetch.bytes": "16384",
                "value.format": "tests.workers.blocking_codec:BlockingJsonCodec",
                "value.blocking-json.signal-dir": str(tmp_path),
            }
        )
        .schema("id INT, name STRING, price DOUBLE")
        .load()
    )
    outcome: dict = {}

    def read() -> None:
        try:
            outcome["rows"] = df.agg(F.count("*"), F.countDistinct("id")).first()
        except Exception as e:  # reported by the assertion below
            outcome["error"] = e

    reader = threading.Thread(target=read)
    reader.start()
    try:
        wait_for(lambda: (tmp_path / "reached").exists() or not reader.is_alive(), "the read task mid-range", 120)
        assert (tmp_path / "reached").exists(), f"the read ended before the restart: {outcome}"
        down = time.monotonic()
        own_broker.restart(graceful=True)  # SIGTERM: a controlled shutdown, as in a rolling upgrade
        outage = time.monotonic() - down
    finally:
        (tmp_path / "released").touch()
        reader.join(300)
    assert not reader.is_alive(), "the read did not finish"
    report("broker SIGTERM and restart during a batch read", outage_s=round(outage, 1), outcome=outcome)
    assert "error" not in outcome, cause(outcome["error"])
    assert tuple(outcome["rows"]) == (n, n)


@pytest.mark.compat
def test_batch_write_completes_across_a_graceful_broker_restart(spark, own_broker, tmp_path):
    servers = own_broker.bootstrap_servers
    topic = create_topic(servers, f"restart-write-{uuid.uuid4().hex[:8]}", 2)
    n = 4_000
    hold = block_first_attempt(None, {0: 1_000}, str(tmp_path))
    df = spark.range(n).selectExpr("CAST(id AS INT) AS id").repartition(2).withColumn("name", hold("id"))
    restart: dict = {}

    def restart_when_held() -> None:
        # The write runs on the test's thread (Spark looks data sources up in the calling thread's session).
        try:
            wait_for(lambda: (tmp_path / "reached-p0").exists(), "the write task mid-way", 120)
            down = time.monotonic()
            own_broker.restart(graceful=True)
            restart["outage_s"] = round(time.monotonic() - down, 1)
        finally:
            (tmp_path / "released").touch()

    restarter = threading.Thread(target=restart_when_held)
    restarter.start()
    try:
        with arrow_batch_rows(spark, 100):  # the held task's first records are in Kafka before the restart
            df.write.format("upsert-kafka").options(
                **{"properties.bootstrap.servers": servers, "topic": topic, "key.fields": "id"}
            ).mode("append").save()
    finally:
        (tmp_path / "released").touch()
        restarter.join(300)
    result = tally(servers, topic, range(n))
    report("broker SIGTERM and restart during a batch write", **restart, figures=result.figures())
    assert "outage_s" in restart, "the broker was not restarted while the write task was held"
    assert result.lost == 0 and result.unexpected == 0, result


def test_stream_fails_with_one_clear_error_when_the_broker_stays_down_beyond_the_bound(spark, own_broker, tmp_path):
    servers = own_broker.bootstrap_servers
    topic = create_topic(servers, f"down-{uuid.uuid4().hex[:8]}", 1)
    produce_ids(servers, topic, range(100))
    bound = {"client.timeout": "4 s", "client.retries": "3", "client.retry-interval": "1 s"}  # 4 + 3 * 1 = 7 s
    query = (
        spark.readStream.format("upsert-kafka")
        .options(**{"properties.bootstrap.servers": servers, "topic": topic, "key.fields": "id", **bound})
        .schema(CHANGES)
        .load()
        .writeStream.format("noop")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    try:
        wait_for(lambda: next_batch(tmp_path / "checkpoint") >= 1 or not query.isActive, "the first micro-batch", 120)
        own_broker.kill()
        down = time.monotonic()
        with contextlib.suppress(StreamingQueryException):
            query.awaitTermination(2 * DEFAULT_PATIENCE_S)
        failed_after = time.monotonic() - down
        assert not query.isActive, "the query did not fail"
        message = str(query.exception())
    finally:
        query.stop()
    report("broker down beyond the bound", bound_s=7, failed_after_s=round(failed_after, 1))
    assert "KafkaUnavailableError" in message
    assert f"the Kafka brokers '{servers}'" in message
    assert "a query waits 7 s for them (options 'client.timeout' = 4 s, 'client.retries' = 3" in message
    # The options' bound, not the default one (60 s), was waited out: a margin no loaded machine takes up.
    assert failed_after < DEFAULT_PATIENCE_S, failed_after
