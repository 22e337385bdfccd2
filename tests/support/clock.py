"""A clock that moves only when a test moves it (kernel.clock.Clock), for timer paths without sleeps."""

from __future__ import annotations

import threading


class ManualClock:
    def __init__(self, now: float = 1000.0, wall: float = 1_700_000_000.0) -> None:
        self._now = now
        self._wall = wall - now  # the wall clock moves with the monotonic one
        self._moved = threading.Condition()
        self._deadlines: list[float] = []  # of the waits in progress

    def monotonic(self) -> float:
        return self._now

    def time(self) -> float:
        return self._wall + self._now

    def advance(self, seconds: float) -> None:
        with self._moved:
            self._now += seconds
            self._moved.notify_all()

    def sleep(self, seconds: float) -> None:
        """A sleep moves the clock by as much, at once (the code under test never waits)."""
        self.advance(seconds)

    def wait(self, stop: threading.Event, timeout: float) -> bool:
        deadline = self._now + timeout
        with self._moved:
            self._deadlines.append(deadline)
            try:
                # `stop` is an Event of its own, not this condition: it is looked at between short real waits.
                while not stop.is_set() and self._now < deadline:
                    self._moved.wait(0.01)
            finally:
                self._deadlines.remove(deadline)
        return stop.is_set()

    def waiting(self) -> list[float]:
        """The deadlines of the waits in progress: a timer thread parked on this clock, and until when."""
        with self._moved:
            return sorted(self._deadlines)
