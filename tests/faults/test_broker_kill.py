"""Scenario 4: the broker killed with SIGKILL (and, once, stopped with SIGTERM) in the middle of a stream that
reads from it and writes to it, then restarted on the same data directory and port. The outage comes while
a write task is held mid-way with records in its transaction (a hook blocks it at a row); the task goes on
writing into the outage, and the query plans its next micro-batch in it. The query rides the outage out
without failing (it is started once more only for the input produced after the outage, as AvailableNow
reads what was there when it started). Nothing is lost; exactly-once writes nothing twice. At-least-once
under repeated kills: test_broker_restarts.py.

The broker is the fault suite's own (tests/faults/conftest.py), never the session's."""

from __future__ import annotations

import contextlib
import time
import uuid

import pytest
from pyspark.errors import StreamingQueryException

from tests.faults.helpers import (
    cause,
    committed_source_offsets,
    copy_stream,
    produce_two_partitions,
    report,
    tally,
    wait_reached,
)
from tests.faults.hooks import block_first_attempt
from tests.support.kafka_io import create_topic, log_ends
from tests.support.read_helpers import wait_for
from tests.support.write_helpers import arrow_batch_rows, task_marker
from tests.workers.failure_injection import open_transaction_has_records

ROWS_PER_TASK = 800
N = 6_400  # half before the outage (2 micro-batches, the second held), half after the broker is back
ARROW_ROWS = 100
HOLD = (1, 0, 600)  # micro-batch, Spark partition and row where a write task waits for the outage to end


@pytest.mark.parametrize(
    ("guarantee", "graceful"),
    [("exactly-once", False), ("exactly-once", True)],
    ids=["exactly-once-SIGKILL", "exactly-once-SIGTERM"],
)
def test_broker_restarted_mid_stream_loses_nothing_and_exactly_once_duplicates_nothing(
    spark, own_broker, tmp_path, guarantee, graceful
):
    broker = own_broker
    servers = broker.bootstrap_servers
    name = f"broker-{'term' if graceful else 'kill'}-{guarantee}-{uuid.uuid4().hex[:8]}"
    source, target = create_topic(servers, f"{name}-in", 2), create_topic(servers, f"{name}-out", 2)
    produce_two_partitions(servers, source, range(N // 2))
    checkpoint = tmp_path / "checkpoint"

    def start(column):
        return copy_stream(spark, servers, source, target, guarantee, checkpoint, 2 * ROWS_PER_TASK, column)

    batch, partition, row = HOLD
    with arrow_batch_rows(spark, ARROW_ROWS):
        query = start(block_first_attempt(batch, {partition: row}, str(tmp_path)))
    try:
        wait_reached(query, [tmp_path / f"reached-p{partition}"], "the query")
        # The other task of this micro-batch done (with exactly-once: committed), the held task's records in
        # flight (more records in the log than the earlier micro-batches and the other task wrote).
        if guarantee == "exactly-once":
            done, other = f" batch {batch} to ", 1 - partition
            wait_for(lambda: done in (task_marker(servers, target, other, target) or ""), "the other task's commit", 60)
            wait_for(lambda: open_transaction_has_records(servers, target), "an open transaction with records", 30)
        else:
            before = 2 * ROWS_PER_TASK * batch + ROWS_PER_TASK
            wait_for(lambda: sum(log_ends(servers, target).values()) > before, "the held task's records", 60)
        down = time.monotonic()
        if graceful:
            broker.stop()
        else:
            broker.kill()
        # The held task goes on writing into the outage; the query plans its next micro-batch in it.
        (tmp_path / "released").touch()
        broker.restart()
        up = time.monotonic()
        outage_s = up - down
        produce_two_partitions(servers, source, range(N // 2, N))
        ends = log_ends(servers, source)

        deadline = time.monotonic() + 300
        for _run in range(3):  # the query, then from its checkpoint for the input produced after the outage
            with contextlib.suppress(StreamingQueryException):  # read below from query.exception()
                query.awaitTermination(max(1.0, deadline - time.monotonic()))
            assert not query.isActive, "the query did not finish in time"
            failure = query.exception()
            assert failure is None, f"{time.monotonic() - up:.1f} s after the broker was back: {cause(failure)}"
            if committed_source_offsets(checkpoint, source) == ends:
                break
            query = start(block_first_attempt(-1, {}, str(tmp_path)))
        else:
            raise AssertionError("the input produced after the outage was not copied within three runs")
    finally:
        (tmp_path / "released").touch()
        query.stop()

    result = tally(servers, target, range(N))
    report(
        f"broker {'SIGTERM' if graceful else 'SIGKILL'} and restart, {guarantee}",
        broker_restarts=1,
        outage_s=round(outage_s, 1),
        query_failures=0,
        figures=result.figures(),
    )
    assert result.lost == 0 and result.unexpected == 0, result
    if guarantee == "exactly-once":
        assert result.duplicated == 0, result
