"""Time as the connector's timers read it, passed in rather than read from the `time` module, so that a test
drives a timer with a manual clock instead of sleeping (as Spark injects its `Clock`)."""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    def monotonic(self) -> float:
        """Seconds on a clock that never goes back."""
        ...

    def wait(self, stop: threading.Event, timeout: float) -> bool:
        """Wait until `stop` is set (True) or `timeout` seconds have passed on this clock (False)."""
        ...


class SystemClock:
    def monotonic(self) -> float:
        return time.monotonic()

    def wait(self, stop: threading.Event, timeout: float) -> bool:
        return stop.wait(timeout)


SYSTEM_CLOCK = SystemClock()
