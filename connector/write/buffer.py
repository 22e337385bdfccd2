"""The reducing buffer (`sink.buffer-flush.*`): keep only the last row per key until a flush (with
`sink.upsert.version`, the row of the highest version).

As Flink's upsert-kafka sink: distinct keys count against max-rows, and a flush sends each buffered key
once, with its final state (or its tombstone). Rows stay Arrow batches and keys stay their encoded bytes;
the last row per key is found with C-speed dict updates (`dict(zip(keys, positions))`: last one wins),
and values are encoded only for the rows that survive.

As Flink's ReducingUpsertSink wraps its writer, `ReducingOutput` wraps the task's output (write.task): the
same `send` / `close` / `stop`, with the buffer and its flush timer in between.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pyarrow as pa

from ..kernel.clock import SYSTEM_CLOCK, Clock


@dataclass
class Pending:
    """Rows on their way to Kafka: the table rows, which of them are deletes, their encoded keys, and each
    row's topic when the write has several."""

    rows: pa.RecordBatch
    deletes: pa.BooleanArray
    keys: list[bytes]
    topics: list[str] | None = None
    versions: np.ndarray | None = None  # int64 per row, with sink.upsert.version: the buffer keeps the highest

    def __len__(self) -> int:
        return len(self.keys)

    def identities(self) -> Sequence[Hashable]:
        """What makes two rows the same record key: the key bytes, within one topic."""
        return self.keys if self.topics is None else list(zip(self.topics, self.keys))

    def slice(self, start: int, stop: int) -> Pending:
        if start == 0 and stop == len(self):
            return self
        topics = None if self.topics is None else self.topics[start:stop]
        versions = None if self.versions is None else self.versions[start:stop]
        rows, deletes, keys = self.rows.slice(start, stop - start), self.deletes[start:stop], self.keys[start:stop]
        return Pending(rows, deletes, keys, topics, versions)

    @staticmethod
    def take(parts: list[Pending], positions: list[int]) -> Pending:
        """The rows at `positions` (ascending) of `parts` laid end to end."""
        rows = pa.Table.from_batches([p.rows for p in parts]).take(pa.array(positions, pa.int64()))
        deletes = pa.concat_arrays([p.deletes for p in parts]).take(pa.array(positions, pa.int64()))
        keys = [k for p in parts for k in p.keys]
        topics = None if parts[0].topics is None else [t for p in parts for t in p.topics or ()]
        versions = None if parts[0].versions is None else np.concatenate([p.versions for p in parts])[positions]
        return Pending(
            rows.combine_chunks().to_batches()[0],
            deletes,
            [keys[i] for i in positions],
            None if topics is None else [topics[i] for i in positions],
            versions,
        )


class ReducingBuffer:
    """Holds rows until `max_rows` distinct keys are buffered; then hands back the last row of each."""

    def __init__(self, max_rows: int) -> None:
        self.max_rows = max_rows
        self._parts: list[Pending] = []
        self._latest: dict[Hashable, int] = {}  # key identity -> position of its last row
        self._rows = 0

    def __len__(self) -> int:
        """Distinct keys buffered."""
        return len(self._latest)

    @property
    def rows(self) -> int:
        """Rows buffered, superseded ones included."""
        return self._rows

    def add(self, pending: Pending) -> list[Pending]:
        """Buffer `pending`; returns the reduced contents each time the buffer filled up (usually none)."""
        full: list[Pending] = []
        ids, start = pending.identities(), 0
        while start < len(ids):
            room = self.max_rows - len(self._latest)
            rest = ids[start:] if start else ids
            if len(set(rest).difference(self._latest)) < room:  # the common case: no flush in this batch
                self._append(pending.slice(start, len(ids)), rest)
                break
            cut = start + self._fill_point(rest, room)
            self._append(pending.slice(start, cut), ids[start:cut])
            full.append(self._reduce())  # not empty: a part was just appended
            start = cut
        return full

    def _fill_point(self, ids: Sequence[Hashable], room: int) -> int:
        """How many of `ids` fit before the buffer holds max_rows distinct keys (the row that fills it
        included). Per-row Python, but only for the batch in which the buffer fills."""
        fresh: set[Hashable] = set()
        for i, identity in enumerate(ids):
            if identity not in self._latest and identity not in fresh:
                fresh.add(identity)
                if len(fresh) == room:
                    return i + 1
        return len(ids)

    def _append(self, part: Pending, ids: Sequence[Hashable]) -> None:
        self._latest.update(zip(ids, range(self._rows, self._rows + len(ids))))
        self._parts.append(part)
        self._rows += len(ids)

    def drain(self) -> Pending | None:
        """The last row of every buffered key, in the order of those rows; the buffer is then empty."""
        return self._reduce() if self._parts else None

    def _reduce(self) -> Pending:
        """`drain` of a buffer that holds rows."""
        kept = sorted(self._latest.values()) if self._parts[0].versions is None else self._highest_versions()
        out = Pending.take(self._parts, kept)
        self._parts, self._latest, self._rows = [], {}, 0
        return out

    def _highest_versions(self) -> list[int]:
        """The position of each key's row of the highest version (equal: the later row), ascending: a key's rows sorted
        by (version, position), its last one taken."""
        code = {identity: n for n, identity in enumerate(self._latest)}
        codes = np.fromiter(map(code.__getitem__, (i for p in self._parts for i in p.identities())), np.int64)
        versions = np.concatenate([p.versions for p in self._parts if p.versions is not None])
        order = np.lexsort((np.arange(len(codes)), versions, codes))
        last = np.append(codes[order][1:] != codes[order][:-1], True)  # the last of each key's run
        kept: list[int] = np.sort(order[last]).tolist()
        return kept


class FlushTimer:
    """Calls `flush` every `interval_s` from a daemon thread while the task waits for its next batch, so a
    buffered row never waits much longer than the interval. The first error is kept for the task's own thread
    to raise (`check`)."""

    def __init__(
        self, interval_s: float, lock: threading.RLock, flush: Callable[[], None], clock: Clock = SYSTEM_CLOCK
    ) -> None:
        self.interval_s, self.lock, self.flush, self.clock = interval_s, lock, flush, clock
        self.last_flush = clock.monotonic()
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="upsert-kafka-buffer-flush", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def due(self) -> bool:
        return self.clock.monotonic() - self.last_flush >= self.interval_s

    def flushed(self) -> None:
        self.last_flush = self.clock.monotonic()

    def _run(self) -> None:
        while not self.clock.wait(self._stop, max(0.0, self.interval_s - (self.clock.monotonic() - self.last_flush))):
            if not self.tick():
                return

    def tick(self) -> bool:
        """One wake-up of the thread: flush when due. False once stopped or failed (the thread then ends)."""
        with self.lock:
            if self._stop.is_set() or self.error is not None:
                return False
            if self.due():
                try:
                    self.flush()
                except BaseException as e:
                    self.error = e
                    return False
        return True

    def check(self) -> None:
        if self.error is not None:
            raise self.error

    def stop(self) -> None:
        self._stop.set()
        with self.lock:  # a flush in progress finishes first
            pass
        self._thread.join(timeout=5)


class Output(Protocol):
    """Where a task's pending rows go (write.task's KafkaOutput, or the buffer in front of it)."""

    def send(self, pending: Pending) -> None: ...

    def flush(self) -> None:
        """Send what is held back and wait until Kafka has everything sent."""
        ...

    def stop(self) -> None:
        """No more rows come (the task's input ended or the task failed): stop what runs on its own."""
        ...


class ReducingOutput:
    """The buffer in front of `inner`: each key's last row only, sent when max-rows distinct keys are held, every
    interval (from the timer's thread, under `lock`) and at the task's end."""

    def __init__(self, inner: Output, max_rows: int, interval_s: float, clock: Clock = SYSTEM_CLOCK) -> None:
        self.inner = inner
        self.buffer = ReducingBuffer(max_rows)
        self.lock = threading.RLock()
        self.reduced = 0  # rows replaced by a later row of their key
        self.timer = FlushTimer(interval_s, self.lock, self._flush, clock)
        self.timer.start()

    def send(self, pending: Pending) -> None:
        with self.lock:
            self.timer.check()
            before = self.buffer.rows
            for full in self.buffer.add(pending):
                self.reduced += before + len(pending) - self.buffer.rows - len(full)
                before = self.buffer.rows + len(pending)  # what remains counts from here
                self.inner.send(full)
                self.inner.flush()
                self.timer.flushed()

    def flush(self) -> None:
        self.timer.check()  # a failed interval flush fails the task
        self._flush()

    def stop(self) -> None:
        self.timer.stop()
        self.inner.stop()

    def _flush(self) -> None:
        """Send the last row of every buffered key and wait until Kafka has them all."""
        with self.lock:
            buffered = self.buffer.rows
            reduced = self.buffer.drain()
            if reduced is not None:
                self.reduced += buffered - len(reduced)
                self.inner.send(reduced)
                self.inner.flush()
            self.timer.flushed()
