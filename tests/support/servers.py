"""The servers a test session starts (brokers, the schema registry): each started on first use and stopped at the
end of the session; the summary of a failed session names their logs. A pytest plugin (tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol, TypeVar

import pytest


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


_worker_logs: list[tuple[str, str]] = []  # with -n: (what it is, its log), as the test sessions reported them


def pytest_sessionfinish(session) -> None:
    # A test session run by pytest-xdist (-n) hands its servers' logs to the controlling process, which prints them.
    if hasattr(session.config, "workeroutput"):
        session.config.workeroutput["server_logs"] = [(what, str(server.log_path)) for what, server in _started]


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    _worker_logs.extend(getattr(node, "workeroutput", {}).get("server_logs", ()))


def pytest_terminal_summary(terminalreporter, exitstatus: int) -> None:
    if exitstatus != 0:
        for what, log in [*((w, str(s.log_path)) for w, s in _started), *_worker_logs]:
            terminalreporter.write_line(f"{what} log: {log}")
