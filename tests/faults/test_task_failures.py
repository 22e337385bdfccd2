"""Scenario 1: task failures injected into every task of a stream's micro-batches, at seeded rows, many
while the task's Kafka transaction holds records; Spark retries each task, and exactly-once writes every
record once."""

from __future__ import annotations

from collections import Counter

from tests.faults.helpers import (
    CHANGES,
    SEED,
    guarantee_options,
    produce_two_partitions,
    report,
    tally,
)
from tests.faults.hooks import fail_first_attempts, failing_row
from tests.support.read_helpers import finish_available_now
from tests.support.write_helpers import arrow_batch_rows
from tests.workers.failure_injection import OPEN_AFTER

ROWS_PER_TASK = 800
BATCHES = 6
ARROW_ROWS = 100  # a failure past OPEN_AFTER finds records in its transaction


def test_twelve_failed_task_attempts_over_six_micro_batches_write_every_record_exactly_once(
    spark, new_topic, options, bootstrap, tmp_path
):
    source, target = new_topic(partitions=2), new_topic(partitions=2)
    n = 2 * ROWS_PER_TASK * BATCHES
    produce_two_partitions(bootstrap, source, range(n))
    failures = tmp_path / "failures"
    failures.mkdir()

    with arrow_batch_rows(spark, ARROW_ROWS):
        changes = (
            spark.readStream.format("upsert-kafka")
            .options(**options(source, {"scan.max-records-per-batch": str(2 * ROWS_PER_TASK)}))
            .schema(CHANGES)
            .load()
        )
        fail = fail_first_attempts(bootstrap, target, ROWS_PER_TASK, SEED, str(failures), OPEN_AFTER, 20)
        query = (
            changes.withColumn("name", fail("id"))
            .writeStream.format("upsert-kafka")
            .options(**options(target, guarantee_options("exactly-once", target)))
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(availableNow=True)
            .start()
        )
        finish_available_now(query, 240)

    batches = sorted({p["batchId"] for p in query.recentProgress if p["numInputRows"]})
    injected = Counter(f.name.rsplit("-", 3)[0] for f in failures.iterdir())
    result = tally(bootstrap, target, range(n))
    report(
        "task failures, exactly-once",
        micro_batches=len(batches),
        faults=sum(injected.values()),
        late_faults_with_open_transaction=injected["late-open"],
        late_faults_without_open_transaction=injected["late-empty"],
        early_faults=injected["early-open"] + injected["early-empty"],
        figures=result.figures(),
    )
    assert batches == list(range(BATCHES))
    # Every task's first attempt failed once (local[2,2] retries a task once), the ones at a seeded row past
    # OPEN_AFTER with records in their transaction.
    assert sum(injected.values()) == 2 * BATCHES, sorted(f.name for f in failures.iterdir())
    late = sum(failing_row(SEED, b, p, ROWS_PER_TASK, OPEN_AFTER) >= OPEN_AFTER for b in batches for p in (0, 1))
    assert injected["late-open"] == late >= BATCHES // 2, sorted(f.name for f in failures.iterdir())
    assert (result.lost, result.duplicated, result.unexpected) == (0, 0, 0), result
