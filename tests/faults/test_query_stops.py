"""Scenario 2: an exactly-once stream stopped mid-batch at seeded points — a seeded row of a seeded task, in
the first micro-batch of the run (the replay of the one stopped before) or the next, often while that
task's transaction holds records, always after the other task committed its part — and restarted from its
checkpoint, again and again. A restarted run replays the stopped micro-batch: the committed task must write
nothing, the stopped one everything."""

from __future__ import annotations

import random
import time

from tests.faults.helpers import (
    CHANGES,
    SEED,
    guarantee_options,
    next_batch,
    produce_two_partitions,
    report,
    tally,
    uncommitted_batch,
    wait_reached,
)
from tests.faults.hooks import block_first_attempt
from tests.support.read_helpers import finish_available_now, wait_for
from tests.support.write_helpers import arrow_batch_rows, task_marker
from tests.workers.failure_injection import OPEN_AFTER, open_transaction_has_records

STOPS = 10
ROWS_PER_TASK = 800
ARROW_ROWS = 100
BATCHES = 9  # of input: every other stopped run commits one, the last run writes what is left


def test_query_stopped_mid_batch_ten_times_and_restarted_writes_every_record_exactly_once(
    spark, new_topic, options, bootstrap, tmp_path
):
    source, target = new_topic(partitions=2), new_topic(partitions=2)
    n = 2 * ROWS_PER_TASK * BATCHES
    produce_two_partitions(bootstrap, source, range(n))
    checkpoint = tmp_path / "checkpoint"
    rng = random.Random(SEED)

    def start(column):
        changes = (
            spark.readStream.format("upsert-kafka")
            .options(**options(source, {"scan.max-records-per-batch": str(2 * ROWS_PER_TASK)}))
            .schema(CHANGES)
            .load()
        )
        return (
            changes.withColumn("name", column("id"))
            .writeStream.format("upsert-kafka")
            .options(**options(target, guarantee_options("exactly-once", target)))
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )

    stops, replays, with_records, in_committed_task, timings = [], 0, 0, 0, []
    with arrow_batch_rows(spark, ARROW_ROWS):
        for run in range(STOPS):
            first = next_batch(checkpoint)
            replays += first == uncommitted_batch(checkpoint)
            batch, partition = first + run % 2, rng.randrange(2)  # odd runs commit a micro-batch first
            row = rng.randrange(OPEN_AFTER, ROWS_PER_TASK) if rng.random() < 0.75 else rng.randrange(OPEN_AFTER // 10)
            signal = tmp_path / f"run-{run}"
            signal.mkdir()
            # A task that committed this micro-batch in an earlier run finds its marker and writes nothing.
            done = f" batch {batch} to "
            skipped = done in (task_marker(bootstrap, target, partition, target) or "")
            began = time.monotonic()
            query = start(block_first_attempt(batch, {partition: row}, str(signal)))
            try:
                wait_reached(query, [signal / f"reached-p{partition}"], f"run {run}")
                if row >= OPEN_AFTER and not skipped:
                    wait_for(lambda: open_transaction_has_records(bootstrap, target), "records in the transaction", 20)
                    with_records += 1
                # The other task commits its part of the micro-batch before the stop: the restart must skip it.
                other = 1 - partition
                committed = lambda o=other, d=done: d in (task_marker(bootstrap, target, o, target) or "")  # noqa: E731
                wait_for(committed, "the other commit", 60)
                reached = time.monotonic()
                query.stop()
                timings.append((round(reached - began, 1), round(time.monotonic() - reached, 1)))
            finally:
                (signal / "released").touch()  # a blocked task the stop left behind goes on
                query.stop()
            stops.append((batch, partition, row))
            in_committed_task += skipped

        started = time.monotonic()
        replays += next_batch(checkpoint) == uncommitted_batch(checkpoint)
        finish_available_now(start(block_first_attempt(-1, {}, str(tmp_path))), 240)

    result = tally(bootstrap, target, range(n))
    report(
        "query stopped mid-batch and restarted, exactly-once",
        stops=len(stops),
        stops_with_records_in_the_transaction=with_records,
        stops_in_a_task_that_had_committed=in_committed_task,
        replayed_batches=replays,
        batches=next_batch(checkpoint),
        last_run_s=round(time.monotonic() - started, 1),
        figures=result.figures(),
    )
    print("stop points (batch, partition, row):", stops)
    print("seconds from start to stop point, and to stop:", timings)
    assert len(stops) == STOPS and with_records >= STOPS // 2 and in_committed_task >= 1
    assert replays >= STOPS // 2, "most stops must leave a planned micro-batch for the restart to replay"
    assert (result.lost, result.duplicated, result.unexpected) == (0, 0, 0), result
