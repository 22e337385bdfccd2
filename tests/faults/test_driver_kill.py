"""Scenario 5: the Spark driver killed with SIGKILL mid-batch, then the query restarted from its checkpoint
by a new driver, exactly-once. Each driver is a child process with its own SparkSession (local mode); the
test kills it by pid: its JVM first, then its Python processes (the PySpark driver and Spark's Python
workers, so no task gets to abort its transaction), as a crash of the driver's host would. The first kill
comes when one task of the micro-batch has committed and the other holds records in its open transaction,
the second when both hold records; the restarted driver replays the micro-batch."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from pathlib import Path

from tests.failure_injection import open_transaction_has_records
from tests.faults.helpers import (
    SEED,
    log_ends,
    marker,
    next_batch,
    produce_two_partitions,
    report,
    session_pids,
    sigkill,
    tally,
    uncommitted_batch,
    wait_gone,
)
from tests.faults.hooks import OPEN_AFTER
from tests.read_helpers import wait_for

ROOT = Path(__file__).resolve().parents[2]
KILLS = 2
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
    kills, killed_processes, replays = [], 0, 0

    for kill in range(KILLS):
        batch = next_batch(checkpoint) + rng.randrange(2)
        held = [rng.randrange(2)] if kill % 2 == 0 else [0, 1]
        rows = {p: rng.randrange(OPEN_AFTER, ROWS_PER_TASK) for p in held}
        signal = tmp_path / f"signal-{kill}"
        signal.mkdir()
        driver = Driver(
            config | {"block": {"batch": batch, "rows": rows, "signal_dir": str(signal)}}, tmp_path / f"d{kill}"
        )
        try:
            reached = [signal / f"reached-p{p}" for p in held]
            wait_for(lambda d=driver, r=reached: all(f.exists() for f in r) or not d.running(), "the hold", 240)
            assert driver.running(), f"driver {kill} ended before its kill point:\n{driver.tail()}"
            wait_for(lambda: open_transaction_has_records(bootstrap, target), "records in an open transaction", 30)
            if len(held) == 1:  # the other task of the micro-batch commits its transaction first
                group, done = f"{target}-{1 - held[0]}", f" batch {batch} to "
                wait_for(lambda g=group, d=done: d in (marker(bootstrap, g, target) or ""), "the other commit", 60)
        finally:
            killed_processes += driver.kill()
        assert uncommitted_batch(checkpoint) == batch, "the killed micro-batch must be planned and not committed"
        kills.append((batch, rows))

    started = time.monotonic()
    replays = int(next_batch(checkpoint) == uncommitted_batch(checkpoint))
    driver = Driver(config, tmp_path / "final")
    try:
        driver.proc.wait(300)
    finally:
        if driver.running():
            driver.kill()
    assert driver.proc.returncode == 0, driver.tail()

    result = tally(bootstrap, target, range(n))
    report(
        "driver SIGKILL mid-batch and restart, exactly-once",
        driver_kills=len(kills),
        processes_killed=killed_processes,
        replayed_batches_at_last_restart=replays,
        last_driver_s=round(time.monotonic() - started, 1),
        figures=result.figures(),
    )
    print("kill points (batch, {partition: row}):", kills)
    assert (result.lost, result.duplicated, result.unexpected) == (0, 0, 0), result
    # The killed drivers' open transactions were fenced by the restart: none holds readers back.
    assert log_ends(bootstrap, target, stable=True) == log_ends(bootstrap, target)
