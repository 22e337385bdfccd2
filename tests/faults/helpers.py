"""Test-side helpers of the fault suite: input records, what a read_committed reader counts, the figures each
test prints, the state of a query's checkpoint, and processes killed by pid (only ones the test started)."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import orjson

from tests.support.checkpoints import committed_batches, planned_batches, planned_offsets
from tests.support.kafka_io import produce
from tests.support.read_helpers import wait_for
from tests.support.write_helpers import key_counts

CHANGES = "id INT, name STRING, price DOUBLE, _change_type STRING"
SEED = 9  # every seeded choice of the suite derives from it


def guarantee_options(guarantee: str, prefix: str) -> dict[str, str]:
    """The sink options of a delivery guarantee; exactly-once with its own transactional id prefix."""
    if guarantee == "exactly-once":
        return {"sink.delivery-guarantee": guarantee, "sink.transactional-id-prefix": prefix}
    return {"sink.delivery-guarantee": guarantee}


def copy_stream(
    spark, servers: str, source: str, target: str, guarantee: str, checkpoint: Path, per_batch: int, column=None
):
    """The broker scenarios' query, started: `source` copied to `target` under `guarantee`, about `per_batch`
    records a micro-batch, AvailableNow (it ends by itself once everything produced before it started is
    copied); `column`, a UDF of the id, makes the name column (e.g. a hook that holds a task)."""
    common = {"properties.bootstrap.servers": servers, "key.fields": "id"}
    df = (
        spark.readStream.format("upsert-kafka")
        .options(**common, topic=source, **{"scan.max-records-per-batch": str(per_batch)})
        .schema(CHANGES)
        .load()
    )
    if column is not None:
        df = df.withColumn("name", column("id"))
    return (
        df.writeStream.format("upsert-kafka")
        .options(**common, topic=target, **guarantee_options(guarantee, target))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )


def produce_ids(bootstrap: str, topic: str, ids: Iterable[int], partition: int | None = None) -> None:
    """Records of key {"id": i} and a small value, one per id."""
    produce(
        bootstrap,
        topic,
        [(orjson.dumps({"id": i}), orjson.dumps({"id": i, "name": f"n{i}", "price": i})) for i in ids],
        partition,
    )


def produce_two_partitions(bootstrap: str, topic: str, ids: range) -> None:
    """Even ids to partition 0, odd ids to partition 1: equal backlogs, so each micro-batch of a stream
    gives both Spark tasks the same number of rows."""
    produce_ids(bootstrap, topic, [i for i in ids if i % 2 == 0], partition=0)
    produce_ids(bootstrap, topic, [i for i in ids if i % 2 == 1], partition=1)


@dataclass(frozen=True)
class Tally:
    """What a read_committed reader finds of `expected` ids: records, distinct ids, lost and duplicated."""

    expected: int
    records: int
    distinct: int
    lost: int
    duplicated: int  # records beyond the first of their id
    unexpected: int  # ids that were never input

    def figures(self) -> str:
        return (
            f"input={self.expected} committed_records={self.records} distinct={self.distinct} "
            f"lost={self.lost} duplicated={self.duplicated} unexpected={self.unexpected}"
        )


def tally(bootstrap: str, topic: str, expected: range) -> Tally:
    counts = key_counts(bootstrap, topic)
    wanted = set(expected)
    return Tally(
        expected=len(wanted),
        records=sum(counts.values()),
        distinct=len(counts),
        lost=len(wanted - counts.keys()),
        duplicated=sum(c - 1 for c in counts.values() if c > 1),
        unexpected=len(counts.keys() - wanted),
    )


def report(scenario: str, **figures: object) -> None:
    """Print the figures a test checks, in one greppable line (see them with `pytest -s` or `-rP`)."""
    print(f"\nFAULT FIGURES [{scenario}] " + " ".join(f"{k}={v}" for k, v in figures.items()), flush=True)


def wait_reached(query, signals: list[Path], what: str, timeout: float = 120) -> None:
    """Wait until a blocking hook (tests.faults.hooks.block_first_attempt) wrote all of `signals`; fail at
    once if the query ended first."""
    wait_for(lambda: all(s.exists() for s in signals) or not query.isActive, f"{what} to reach its stop point", timeout)
    assert query.isActive, f"{what} ended before its stop point: {query.exception()}"


def cause(error: BaseException) -> str:
    """The line of a query failure that names its cause: the last Python exception line of the traceback
    Spark wraps, else the first line."""
    lines = str(error).splitlines()
    raised = [line.strip() for line in lines if re.match(r"\s*[\w.]+(Error|Exception): ", line)]
    return (raised[-1] if raised else lines[0] if lines else repr(error))[:400]


# -- a query's checkpoint ----------------------------------------------------------------------------


def next_batch(checkpoint: Path) -> int:
    """The id of the first micro-batch a (re)started query runs: the last planned one when it was not
    committed (Spark replays it), else the one after the last committed."""
    planned, committed = planned_batches(checkpoint), committed_batches(checkpoint)
    if planned and (not committed or committed[-1] < planned[-1]):
        return planned[-1]
    return committed[-1] + 1 if committed else 0


def uncommitted_batch(checkpoint: Path) -> int | None:
    """A planned micro-batch without its commit (the restart replays it), or None."""
    planned, committed = planned_batches(checkpoint), committed_batches(checkpoint)
    return planned[-1] if planned and (not committed or committed[-1] < planned[-1]) else None


def committed_source_offsets(checkpoint: Path, topic: str) -> dict[int, int]:
    """The next offset per partition of `topic` after the last committed micro-batch ({} before any)."""
    committed = committed_batches(checkpoint)
    if not committed:
        return {}
    return {int(p): o for p, o in planned_offsets(checkpoint, committed[-1]).get(topic, {}).items()}


# -- processes -----------------------------------------------------------------------------------------


def _stat(pid: int) -> list[str] | None:
    """Fields of /proc/<pid>/stat after the command name (state is [0], ppid [1], session [3])."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def alive(pid: int) -> bool:
    stat = _stat(pid)
    return stat is not None and stat[0] != "Z"


def descends_from(pid: int, ancestor: int) -> bool:
    """True when `ancestor` is among pid's parents (bounded walk up the tree)."""
    for _ in range(64):
        stat = _stat(pid)
        if stat is None:
            return False
        pid = int(stat[1])
        if pid == ancestor:
            return True
        if pid <= 1:
            return False
    return False


def session_pids(session: int) -> list[int]:
    """Live processes of a session the test created (start_new_session=True: its id is the leader's pid)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None and stat[0] != "Z" and int(stat[3]) == session:
                out.append(int(entry.name))
    return out


def sigkill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def wait_gone(pids: Iterable[int], timeout: float = 30) -> list[int]:
    """Wait until none of pids is alive; returns the ones still alive at the timeout."""
    deadline, left = time.monotonic() + timeout, list(pids)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [p for p in left if alive(p)]
    return left
