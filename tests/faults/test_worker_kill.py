"""Scenario 3: a Python worker of a write task killed with SIGKILL in the middle of the task, while the task's
producer has records in flight (with exactly-once: in its open transaction); Spark retries the task.
Nothing is lost, exactly-once writes nothing twice, and read_committed readers are past the dead transaction
when the write ends: the retry fences it (its producer's start aborts the open transaction), not the transaction
timeout (the brokers' maximum, 15 minutes). The victim is either the worker that runs the writer itself, or the
worker of a Python UDF that feeds it (the writer then sees its input end early and must not commit the part it
got)."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.faults.helpers import (
    descends_from,
    guarantee_options,
    report,
    tally,
)
from tests.faults.hooks import KILL_AFTER_KEYS, PID_DIR, block_first_attempt
from tests.support.kafka_io import log_ends
from tests.support.read_helpers import wait_for
from tests.support.write_helpers import arrow_batch_rows, task_marker
from tests.workers.failure_injection import open_transaction_has_records

ROWS = 20_000  # two tasks of 10,000


def kill_in_background(
    victim: Callable[[], int | None], ready: Callable[[], bool], bootstrap: str, target: str
) -> tuple[threading.Thread, dict]:
    """A thread that, while the test's write runs, waits for the victim's pid and for `ready`, notes the log end
    of `target` and SIGKILLs the victim. Its findings (ends_at_kill, killed_at, or error) land in the returned
    dict."""
    seen: dict = {}

    def run() -> None:
        try:
            wait_for(lambda: victim() is not None, "the victim's pid", 120)
            pid = victim()
            assert descends_from(pid, os.getpid()), f"pid {pid} is not a Python worker of this test's Spark"
            assert b"python" in Path(f"/proc/{pid}/cmdline").read_bytes()
            wait_for(ready, "the kill point", 60)
            seen["ends_at_kill"] = log_ends(bootstrap, target)
            os.kill(pid, signal.SIGKILL)
            seen["killed_at"] = time.monotonic()
        except BaseException as e:
            seen["error"] = e

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, seen


def readers_past_the_kill(bootstrap: str, target: str) -> dict:
    """Right as the write returned: how far read_committed readers may read, and when."""
    return {"stable_ends": log_ends(bootstrap, target, stable=True), "at": time.monotonic()}


def finish(killer: threading.Thread, seen: dict, ended: dict) -> tuple[dict[int, int], float]:
    """The log ends at the kill, and the seconds from the kill to the write's end. read_committed readers were past
    every record of the killed attempt when the write returned: the retry's producer fenced its transaction (it
    aborts the open one before it starts), so they waited for no transaction timeout, whatever the machine's pace."""
    killer.join(150)
    assert not killer.is_alive() and "error" not in seen, seen.get("error", "the killer thread is still waiting")
    ends = seen["ends_at_kill"]
    if not ended:  # the write failed: its own error goes on
        return ends, 0.0
    behind = {p: (o, ends[p]) for p, o in ended["stable_ends"].items() if o < ends[p]}
    assert not behind, f"read_committed readers still behind the killed attempt's records (stable, at kill): {behind}"
    return ends, ended["at"] - seen["killed_at"]


def rows_of(spark):
    return spark.range(0, ROWS, 1, numPartitions=2).selectExpr(
        "cast(id as int) as id", "concat('name-', id) as name", "cast(id as double) as price"
    )


KILL_AFTER_KEYS_N = 3500  # in the fourth Arrow batch of 1,000 rows, while it is partitioned
HANDED_OVER = 3000  # records of the first three Arrow batches, in the producer before the kill


@pytest.mark.parametrize("guarantee", ["exactly-once", "at-least-once"])
def test_writer_worker_killed_mid_task_is_retried_without_loss_and_readers_move_on(
    spark, new_topic, options, bootstrap, tmp_path, guarantee
):
    target = new_topic(partitions=2)
    opts = options(target, guarantee_options(guarantee, target))
    # The victim: the writer's own worker, which reports its pid from inside the partitioner.
    opts["sink.partitioner"] = "tests.faults.hooks:crc32_then_wait_for_kill"
    pid_file = tmp_path / "writer.pid"
    # Kill when the log holds all the other task wrote (its records and, with exactly-once, its two commit
    # markers) plus the records the victim handed to its producer: these are then the only ones in flight
    # or in an open transaction.
    in_log = ROWS // 2 + HANDED_OVER + (2 if guarantee == "exactly-once" else 0)
    killer, seen = kill_in_background(
        lambda: int(pid_file.read_text()) if pid_file.exists() else None,
        lambda: sum(log_ends(bootstrap, target).values()) >= in_log,
        bootstrap,
        target,
    )
    context = spark.sparkContext
    # Local properties reach the tasks of this thread's jobs: they arm the partitioner's hook.
    context.setLocalProperty(PID_DIR, str(tmp_path))
    context.setLocalProperty(KILL_AFTER_KEYS, str(KILL_AFTER_KEYS_N))
    ended: dict = {}
    try:
        with arrow_batch_rows(spark, 1000):
            rows_of(spark).write.format("upsert-kafka").options(**opts).mode("append").save()
        ended.update(readers_past_the_kill(bootstrap, target))
    finally:
        context.setLocalProperty(PID_DIR, None)
        context.setLocalProperty(KILL_AFTER_KEYS, None)
        ends_at_kill, write_end_s = finish(killer, seen, ended)

    result = tally(bootstrap, target, range(ROWS))
    report(
        f"writer worker SIGKILL, {guarantee}",
        kills=1,
        records_in_log_at_kill=sum(ends_at_kill.values()),
        readers_past_by_the_write_end_s=round(write_end_s, 2),
        figures=result.figures(),
    )
    assert result.lost == 0 and result.unexpected == 0, result
    # At-least-once: the retry writes the killed attempt's records again; exactly-once: never.
    assert result.duplicated == (0 if guarantee == "exactly-once" else HANDED_OVER), result


def test_udf_worker_killed_while_the_writer_holds_records_commits_nothing_partial(
    spark, new_topic, options, bootstrap, tmp_path
):
    target = new_topic(partitions=2)
    opts = options(target, guarantee_options("exactly-once", target))
    # The victim: the worker of the UDF feeding task 0's writer, held at row 2,000 of its 10,000.
    hold = block_first_attempt(None, {0: 2000}, str(tmp_path))
    reached = tmp_path / "reached-p0"
    killer, seen = kill_in_background(
        lambda: json.loads(reached.read_text())["pid"] if reached.exists() else None,
        # Task 1 committed (its marker is there), so the open transaction with records is task 0's.
        lambda: (
            task_marker(bootstrap, target, 1, target) is not None and open_transaction_has_records(bootstrap, target)
        ),
        bootstrap,
        target,
    )
    ended: dict = {}
    try:
        with arrow_batch_rows(spark, 100):
            rows_of(spark).withColumn("name", hold("id")).write.format("upsert-kafka").options(**opts).mode(
                "append"
            ).save()
        ended.update(readers_past_the_kill(bootstrap, target))
    finally:
        (tmp_path / "released").touch()
        ends_at_kill, write_end_s = finish(killer, seen, ended)

    result = tally(bootstrap, target, range(ROWS))
    report(
        "UDF worker SIGKILL, exactly-once",
        kills=1,
        records_in_log_at_kill=sum(ends_at_kill.values()),
        readers_past_by_the_write_end_s=round(write_end_s, 2),
        figures=result.figures(),
    )
    assert (result.lost, result.duplicated, result.unexpected) == (0, 0, 0), result
