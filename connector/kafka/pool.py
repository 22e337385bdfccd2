"""Kafka clients kept open in a Spark Python worker between its tasks, as the JVM connector pools its
consumers and producers.

Spark reuses its Python workers across tasks and micro-batches (`spark.python.worker.reuse`), one task at a
time per worker. A client made per task costs a connection, metadata and, for an idempotent producer, a
producer id: about 0.5 s before its first record is acknowledged, which dominated a micro-batch. So a task
borrows its clients from its worker's pool:

- keyed by the client's whole configuration (servers, every property, transactional id, group id): a client
  is only ever reused with exactly the settings it was made with;
- lent to one borrower at a time: a borrowed client is out of the pool until it comes back;
- taken back only clean (the borrower says so, no error was reported through its callback, and its reset
  succeeded: a consumer unassigned, a producer with nothing in flight); any other client is closed;
- closed after `client.pool.idle-timeout` without a borrower (0: closed after every task), and the least
  recently used beyond MAX_IDLE.

A child process forked from one that pooled clients starts with an empty pool and leaves the parent's alone
(librdkafka's threads do not survive a fork). Nothing here knows Kafka: clients.py makes the clients, their
keys and their resets.

The pool also keeps what else the connector holds per process (`shared`): token providers, and in a stream's
driver-side worker, where Spark plans every micro-batch's write, what the brokers said about the write's topics and
which queries were fenced. It is the one module with state of its own.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast

from ..kernel.clock import SYSTEM_CLOCK, Clock

log = logging.getLogger("upsert_kafka")

C = TypeVar("C")
T = TypeVar("T")

# A client's key: its kind ("producer", ...), then its whole configuration.
ClientKey = tuple[Hashable, ...]

# Idle clients one worker keeps at most (an exactly-once writer pools one producer per transactional id).
MAX_IDLE = 8


@dataclass(eq=False)
class Pooled(Generic[C]):
    """A client lent from the pool, with what travels with it."""

    key: ClientKey = field(repr=False)  # the configuration: may hold credentials, never shown
    client: C
    errors: Any  # its error callback (errors.ClientErrors)
    reset: Callable[[C], bool]  # readies it for the next borrower; False: not reusable
    close: Callable[[C], object]  # ends it (a producer is dropped after a purge: its handle ends when collected)
    relay: Any = None  # a producer's delivery-report relay (clients.DeliveryRelay)
    reused: bool = False  # lent before
    memo: dict[str, Any] = field(default_factory=dict)  # what borrowers learned about this client, for the next one
    expires: float = 0.0


class ClientPool:
    def __init__(self, max_idle: int = MAX_IDLE, clock: Clock = SYSTEM_CLOCK) -> None:
        self.max_idle, self.clock = max_idle, clock
        self._lock = threading.Lock()
        # Clients of every kind (a key's first item): least recently given back first.
        self._idle: OrderedDict[int, Pooled[Any]] = OrderedDict()
        self._timer: threading.Event | None = None  # set: the armed sweep is cancelled
        self._timer_due = 0.0
        # Clients made and lent again, by kind (a key's first item): what a worker's tasks cost in clients.
        self.made: Counter[Hashable] = Counter()
        self.lent_again: Counter[Hashable] = Counter()
        self._shared: dict[Hashable, tuple[float, float | None, object]] = {}  # key -> (made at, ttl, value)
        self._shared_lock = threading.Lock()  # guards the dict only: making a value may ask the brokers
        self._making: dict[Hashable, threading.Lock] = {}  # a key's value is made by one thread at a time

    def shared(self, key: Hashable, make: Callable[[], T], ttl_s: float | None = None) -> T:
        """This process's one value for `key`, made by `make` on first use (with `ttl_s`: made again once that
        old). A key's value is made by one thread at a time, under no lock another key needs: making a write
        target asks the brokers through a client whose token provider is itself a shared value."""
        with self._shared_lock:
            found = self._fresh(key)
            if found is not None:
                return cast(T, found[2])  # what a `make` of this key made: a key's callers all make one type
            making = self._making.setdefault(key, threading.Lock())
        with making:
            with self._shared_lock:
                found = self._fresh(key)  # made meanwhile by the thread this one waited for
            if found is not None:
                return cast(T, found[2])
            value = make()
            with self._shared_lock:
                now = self.clock.monotonic()
                self._shared = {k: v for k, v in self._shared.items() if v[1] is None or now - v[0] <= v[1]}
                self._shared[key] = (now, ttl_s, value)
            return value

    def _fresh(self, key: Hashable) -> tuple[float, float | None, object] | None:
        found = self._shared.get(key)
        fresh = found is not None and (found[1] is None or self.clock.monotonic() - found[0] <= found[1])
        return found if fresh else None

    def shared_if_made(self, key: Hashable) -> Any:
        """The value `shared` keeps for `key`, or None when none was made (or it is too old)."""
        with self._shared_lock:
            found = self._fresh(key)
            return None if found is None else found[2]

    def borrow(self, key: ClientKey, create: Callable[[], Pooled[C]], fresh: bool = False) -> Pooled[C]:
        """An idle client made with `key` (none when `fresh`), else a new one from `create`."""
        with self._lock:
            expired = self._take_expired(self.clock.monotonic())
            found = None if fresh else next((i for i, p in reversed(self._idle.items()) if p.key == key), None)
            pooled = self._idle.pop(found) if found is not None else None
        _close_all(expired)
        if pooled is None:
            pooled = create()
            self.made[key[0]] += 1
            return pooled
        pooled.reused = True
        pooled.errors.last = None
        self.lent_again[key[0]] += 1
        return pooled

    def give_back(self, pooled: Pooled[C], clean: bool, idle_timeout_s: float) -> None:
        """Keep `pooled` for the next borrower if it is clean and may stay idle; close it otherwise."""
        if pooled.relay is not None:
            pooled.relay.target = None
        keep = clean and idle_timeout_s > 0 and pooled.errors.final is None and _reset(pooled)
        if not keep:
            _close(pooled)
            return
        now = self.clock.monotonic()
        pooled.expires = now + idle_timeout_s
        with self._lock:
            self._idle[id(pooled)] = pooled
            evicted = self._take_expired(now)
            while len(self._idle) > self.max_idle:
                evicted.append(self._idle.popitem(last=False)[1])
            self._arm(pooled.expires)
        _close_all(evicted)

    def idle(self) -> int:
        with self._lock:
            return len(self._idle)

    def clear(self) -> None:
        """Close every idle client."""
        with self._lock:
            idle, self._idle = list(self._idle.values()), OrderedDict()
        _close_all(idle)

    def _forget(self) -> None:
        """In a forked child: the parent's clients are not ours to use or close. Not even to drop: a client
        collected here would end its librdkafka handle, whose threads stayed in the parent (a crash)."""
        _INHERITED.append(self._idle)
        self._lock = threading.Lock()
        self._idle = OrderedDict()
        self._timer, self._timer_due = None, 0.0
        self.made, self.lent_again = Counter(), Counter()
        # A provider's threads stayed in the parent; a lock held there at the fork stays held here.
        self._shared, self._shared_lock, self._making = {}, threading.Lock(), {}

    def _take_expired(self, now: float) -> list[Pooled[Any]]:
        gone = [k for k, p in self._idle.items() if p.expires <= now]
        return [self._idle.pop(k) for k in gone]

    def _arm(self, due: float) -> None:
        """Sweep at `due` at the latest (under the lock), on the pool's clock: a thread waits for it."""
        if self._timer is not None and self._timer_due <= due:
            return
        if self._timer is not None:
            self._timer.set()
        self._timer_due = due
        self._timer = cancelled = threading.Event()
        delay = max(0.0, due - self.clock.monotonic()) + 0.01
        sweeper = threading.Thread(target=self._sweep, args=(delay, cancelled), name="upsert-kafka-pool-sweep")
        sweeper.daemon = True
        sweeper.start()

    def _sweep(self, delay: float, cancelled: threading.Event) -> None:
        if self.clock.wait(cancelled, delay):
            return
        with self._lock:
            if cancelled.is_set():  # an earlier sweep was armed while this one's wait ended
                return
            self._timer = None
            expired = self._take_expired(self.clock.monotonic())
            if self._idle:
                self._arm(min(p.expires for p in self._idle.values()))
        _close_all(expired)


def _reset(pooled: Pooled[C]) -> bool:
    try:
        return pooled.reset(pooled.client)
    except Exception as e:  # not reusable, whatever the reason: closed instead
        log.debug("upsert-kafka: a pooled client could not be reset (%s); closing it", e)
        return False


def _close(pooled: Pooled[C]) -> None:
    try:
        pooled.close(pooled.client)
    except Exception as e:  # closing is best effort: the client is dropped either way
        log.debug("upsert-kafka: closing a Kafka client failed: %s", e)


def _close_all(clients: list[Pooled[Any]]) -> None:
    for pooled in clients:
        _close(pooled)


# In a forked child, the parent's idle clients: kept, never collected.
_INHERITED: list[OrderedDict[int, Pooled[Any]]] = []
CLIENT_POOL = ClientPool()
os.register_at_fork(after_in_child=CLIENT_POOL._forget)
