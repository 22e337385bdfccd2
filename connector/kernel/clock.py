"""Time as the connector reads it, passed in rather than read from the `time` module, so that a test drives a
timer, a deadline or a retry's pause with a manual clock instead of sleeping (as Spark injects its `Clock`). Every
product module reads time through a Clock (tests/unit/test_clock_reads.py holds it so): the one that was passed in,
or SYSTEM_CLOCK where the wait is real whatever a test does (a network wait; each such place says why)."""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    def monotonic(self) -> float:
        """Seconds on a clock that never goes back."""
        ...

    def time(self) -> float:
        """The wall clock: seconds since the epoch (for comparing with instants given by others)."""
        ...

    def sleep(self, seconds: float) -> None:
        """Let `seconds` pass on this clock."""
        ...

    def wait(self, stop: threading.Event, timeout: float) -> bool:
        """Wait until `stop` is set (True) or `timeout` seconds have passed on this clock (False)."""
        ...


class SystemClock:
    def monotonic(self) -> float:
        return time.monotonic()

    def time(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def wait(self, stop: threading.Event, timeout: float) -> bool:
        return stop.wait(timeout)


SYSTEM_CLOCK = SystemClock()
