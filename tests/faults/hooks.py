"""Faults that run inside Spark's Python workers (they import this module by name): column functions that
fail or block a task's first attempt at a chosen row, and a partitioner that lets the test kill the very
worker that holds a task's Kafka transaction.

The per-row logic lives in module-level functions: closures are pickled by value, but a module function is
pickled by reference, so the per-task row counters below are this worker's, not a copy."""

from __future__ import annotations

import json
import os
import random
import time
import zlib
from pathlib import Path

from tests.workers.failure_injection import open_transaction_has_records, text

# Rows seen by each task attempt of this worker, by Spark's task attempt id.
_ROWS: dict[int, int] = {}
# Keys partitioned by each task attempt of this worker (the kill partitioner).
_KEYS: dict[int, int] = {}


def _task() -> tuple[object, int, int | None]:
    """(TaskContext, this row's index within its task attempt, the micro-batch id or None)."""
    from pyspark import TaskContext

    context = TaskContext.get()
    attempt = context.taskAttemptId()
    row = _ROWS.get(attempt, 0)
    _ROWS[attempt] = row + 1
    batch = context.getLocalProperty("streaming.sql.batchId")
    return context, row, None if batch is None else int(batch)


def failing_row(seed: int, batch: int | None, partition: int, rows_per_task: int, open_after: int) -> int:
    """The row at which the first attempt of a task fails, seeded by the batch and the Spark partition: a
    third of the tasks fail early (before their first rows can reach the writer), the others past
    `open_after` (when the writer has records in flight)."""
    rng = random.Random(f"{seed}:{batch}:{partition}")
    return rng.randrange(open_after // 10) if rng.random() < 1 / 3 else rng.randrange(open_after, rows_per_task)


def fail_at_seeded_row(config: dict, seq: int) -> str:
    context, row, batch = _task()
    if context.attemptNumber() != 0 or row != failing_row(
        config["seed"], batch, context.partitionId(), config["rows_per_task"], config["open_after"]
    ):
        return text(seq)
    # Past a few Arrow batches the writer has records in flight: wait until its transaction holds some.
    late = row >= config["open_after"]
    is_open = open_transaction_has_records(config["bootstrap"], config["topic"])
    deadline = time.monotonic() + config["patience_s"]
    while late and not is_open and time.monotonic() < deadline:
        time.sleep(0.1)
        is_open = open_transaction_has_records(config["bootstrap"], config["topic"])
    name = f"{'late' if late else 'early'}-{'open' if is_open else 'empty'}-b{batch}-p{context.partitionId()}-r{row}"
    Path(config["log_dir"], name).touch()
    raise RuntimeError(f"injected failure at row {row} of batch {batch}, partition {context.partitionId()}")


def fail_first_attempts(
    bootstrap: str, topic: str, rows_per_task: int, seed: int, log_dir: str, open_after: int, patience_s: float = 10
):
    """A column function for `withColumn`: `text(seq)`, except that the first attempt of every task fails at a
    seeded row (`failing_row`); a row past `open_after` first waits (at most patience_s) until a transaction
    on `topic` holds records (see OPEN_AFTER). Each failure leaves a file in log_dir:
    `<late|early>-<open|empty>-b<batch>-p<partition>-r<row>`, `open` when a transaction on `topic` (this
    task's, or another task's early on) held records."""
    from pyspark.sql import functions as F

    config = {
        "bootstrap": bootstrap,
        "topic": topic,
        "rows_per_task": rows_per_task,
        "seed": seed,
        "log_dir": log_dir,
        "open_after": open_after,
        "patience_s": patience_s,
    }

    def column(seq: int) -> str:
        return fail_at_seeded_row(config, seq)

    return F.udf(column, "string", useArrow=False).asNondeterministic()


def block_at_row(config: dict, seq: int) -> str:
    context, row, batch = _task()
    at = config["rows"].get(str(context.partitionId()))
    if context.attemptNumber() == 0 and batch == config["batch"] and row == at:
        signal_dir = Path(config["signal_dir"])
        reached = {"pid": os.getpid(), "batch": batch, "partition": context.partitionId(), "row": row}
        _write_atomically(Path(signal_dir, f"reached-p{context.partitionId()}"), json.dumps(reached))
        deadline = time.monotonic() + config["patience_s"]
        while not Path(signal_dir, "released").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    return text(seq)


def block_first_attempt(batch: int | None, rows: dict[int, int], signal_dir: str, patience_s: float = 120):
    """A column function for `withColumn`: `text(seq)`, except that in micro-batch `batch` (None: a batch
    write) the first attempt of the task of each Spark partition in `rows` stops at row `rows[partition]`:
    it writes `reached-p<partition>` (JSON: pid, batch, partition, row) into signal_dir and waits there until
    the test creates `released` in signal_dir (at most patience_s), meanwhile the test stops or kills the
    query, its driver, the broker or this worker."""
    from pyspark.sql import functions as F

    config = {
        "batch": batch,
        "rows": {str(p): r for p, r in rows.items()},
        "signal_dir": signal_dir,
        "patience_s": patience_s,
    }

    def column(seq: int) -> str:
        return block_at_row(config, seq)

    return F.udf(column, "string", useArrow=False).asNondeterministic()


# Local properties the test sets on the thread that starts the write, read by `crc32_then_wait_for_kill`.
PID_DIR = "faults.pid-dir"
KILL_AFTER_KEYS = "faults.kill-after-keys"


def crc32_then_wait_for_kill(key: bytes, num_partitions: int) -> int:
    """A `sink.partitioner` (CRC-32 of the key: any fixed function of the key keeps a key in one partition)
    that, in the first attempt of the write task of Spark partition 0, after `faults.kill-after-keys` keys,
    writes this worker's pid to `<faults.pid-dir>/writer.pid` and waits to be killed. The records of the
    keys before were handed to the producer already, so they are in flight or in the task's transaction."""
    from pyspark import TaskContext

    context = TaskContext.get()
    pid_dir = context.getLocalProperty(PID_DIR) if context is not None else None
    if pid_dir and context.attemptNumber() == 0 and context.partitionId() == 0:
        attempt = context.taskAttemptId()
        seen = _KEYS.get(attempt, 0)
        _KEYS[attempt] = seen + 1
        if seen == int(context.getLocalProperty(KILL_AFTER_KEYS)):
            _write_atomically(Path(pid_dir, "writer.pid"), str(os.getpid()))
            deadline = time.monotonic() + 120  # the test SIGKILLs this process long before
            while time.monotonic() < deadline:
                time.sleep(0.1)
            raise RuntimeError("the writer worker was not killed within 120 s")
    return zlib.crc32(key) % num_partitions


def _write_atomically(path: Path, content: str) -> None:
    """The test polls for `path`: it must never see it half written."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(content)
    tmp.rename(path)
