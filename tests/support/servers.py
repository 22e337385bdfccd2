"""The servers a test session starts (brokers, the schema registry): each started on first use and stopped at the
end of the session; the summary of a failed session names their logs. A pytest plugin (tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol, TypeVar


class Server(Protocol):
    @property
    def log_path(self) -> Path: ...

    def start(self) -> None: ...

    def stop(self) -> None: ...


S = TypeVar("S", bound=Server)
_started: list[tuple[str, Server]] = []  # (what it is, the server), in the order they started


@contextmanager
def started(what: str, server: S) -> Iterator[S]:
    """`server` started for the session (a session fixture yields within this) and stopped after it."""
    server.start()
    _started.append((what, server))
    try:
        yield server
    finally:
        server.stop()


def pytest_terminal_summary(terminalreporter, exitstatus: int) -> None:
    if exitstatus != 0:
        for what, server in _started:
            terminalreporter.write_line(f"{what} log: {server.log_path}")
