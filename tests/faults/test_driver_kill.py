"""Scenario 5: the Spark driver killed with SIGKILL mid-batch, then the query restarted from its checkpoint
by a new driver, exactly-once. Each driver is a child process with its own SparkSession (local mode); the
test kills it by pid: its JVM first, then its Python processes (the PySpark driver and Spark's Python
workers, so no task gets to abort its transaction), as a crash of the driver's host would. The kill comes
at a seeded point of a micro-batch, when one of its tasks has committed and the other holds records in its
open transaction: the new driver replays the micro-batch, skips the committed task's write and fences the
open transaction."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from pathlib import Path

from tests.faults.helpers import (
    SEED,
    produce_two_partitions,
    report,
    session_pids,
    sigkill,
    tally,
    uncommitted_batch,
    wait_gone,
)
from tests.support.kafka_io import log_ends
from tests.support.read_helpers import wait_for
from tests.support.write_helpers import task_marker
from tests.workers.failure_injection import OPEN_AFTER, open_transaction_has_records

ROOT = Path(__file__).resolve().parents[2]
ROWS_PER_TASK = 800
BATCHES = 4
ARROW_ROWS = 100


class Driver:
    """One run of tests.faults.driver_query in its own session (its id is the child's pid)."""

    def __init__(self, config: dict, folder: Path) -> None:
        folder.mkdir()
        self.pids_file, self.log = folder / "pids.json", folder / "driver.log"
        config = config | {"pids": str(self.pids_file)}
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tests.faults.driver_query", json.dumps(config)],
                cwd=ROOT,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def running(self) -> bool:
        return self.proc.poll() is None

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]

    def kill(self) -> int:
        """SIGKILL the driver's JVM, then every other process of its session, by pid; returns how many."""
        members = session_pids(self.proc.pid)
        jvm = json.loads(self.pids_file.read_text())["jvm"] if self.pids_file.exists() else None
        assert jvm is None or jvm in members, f"the driver's JVM (pid {jvm}) is not in its session {members}"
        for pid in sorted(members, key=lambda p: p != jvm):  # the JVM first: no new task, no commit
            sigkill(pid)
        self.proc.wait(30)
        late = session_pids(self.proc.pid)  # anything forked while the others were being killed
        for pid in late:
            sigkill(pid)
        left = wait_gone(members + late, 30)
        assert not left, f"processes of the killed driver still alive: {left}"
        return len(members)


def test_driver_killed_mid_batch_and_restarted_from_its_checkpoint_writes_every_record_exactly_once(
    new_topic, bootstrap, tmp_path
):
    source, target = new_topic(partitions=2), new_topic(partitions=2)
    n = 2 * ROWS_PER_TASK * BATCHES
    produce_two_partitions(bootstrap, source, range(n))
    checkpoint = tmp_path / "checkpoint"
    config = {
        "bootstrap": bootstrap,
        "source": source,
        "target": target,
        "checkpoint": str(checkpoint),
        "rows_per_batch": 2 * ROWS_PER_TASK,
        "arrow_rows": ARROW_ROWS,
    }
    rng = random.Random(SEED)
    batch, held = rng.randrange(2), rng.randrange(2)
    row, other = rng.randrange(OPEN_AFTER, ROWS_PER_TASK), 1 - held
    signal = tmp_path / "signal"
    signal.mkdir()
    driver = Driver(
        config | {"block": {"batch": batch, "rows": {held: row}, "signal_dir": str(signal)}}, tmp_path / "d0"
    )
    try:
        reached = signal / f"reached-p{held}"
        wait_for(lambda: reached.exists() or not driver.running(), "the driver to reach its kill point", 240)
        assert driver.running(), f"the driver ended before its kill point:\n{driver.tail()}"
        wait_for(lambda: open_transaction_has_records(bootstrap, target), "records in an open transaction", 30)
        done = f" batch {batch} to "
        wait_for(lambda: done in (task_marker(bootstrap, target, other, target) or ""), "the other task's commit", 60)
    finally:
        killed_processes = driver.kill()
    assert uncommitted_batch(checkpoint) == batch, "the killed micro-batch must be planned and not committed"

    started = time.monotonic()
    driver = Driver(config, tmp_path / "d1")
    try:
        driver.proc.wait(300)
    finally:
        if driver.running():
            driver.kill()
    assert driver.proc.returncode == 0, driver.tail()

    result = tally(bootstrap, target, range(n))
    report(
        "driver SIGKILL mid-batch and restart, exactly-once",
        driver_kills=1,
        replayed_batch=batch,
        processes_killed=killed_processes,
        kill_point=f"batch {batch}, task {held} at row {row} with records in its transaction, task {other} committed",
        second_driver_s=round(time.monotonic() - started, 1),
        figures=result.figures(),
    )
    assert (result.lost, result.duplicated, result.unexpected) == (0, 0, 0), result
    # The killed driver's open transaction was fenced by the new driver: none holds readers back.
    assert log_ends(bootstrap, target, stable=True) == log_ends(bootstrap, target)
