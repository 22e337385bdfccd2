"""What the harness's servers (the Kafka broker, the schema registry) share: each runs as a child JVM, or is
re-attached to by pid when the CLI started it, and writes its log into its workdir."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import ClassVar


def pid_alive(pid: int, mark: bytes | None = None) -> bool:
    """pid exists and is no zombie; with `mark`: and its command line holds it (not a recycled pid).

    An exiting JVM already has an empty cmdline, so waiting for an exit goes without a mark."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    if stat.rsplit(")", 1)[1].split()[0] == "Z":
        return False
    return mark is None or mark in cmdline


class ServerProcess:
    """A server's process: its child process, or the pid of one the CLI started (set instead)."""

    log_name: ClassVar[str]  # the log file in the workdir
    command_mark: ClassVar[bytes | None] = None  # what an attached pid's command line must hold

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self._proc: subprocess.Popen[bytes] | None = None
        self._pid: int | None = None

    @property
    def log_path(self) -> Path:
        return self.workdir / self.log_name

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else self._pid

    def is_running(self) -> bool:
        if self._proc is not None:
            return self._proc.poll() is None
        return self._pid is not None and pid_alive(self._pid, self.command_mark)

    def _start_process(
        self, cmd: list[str], cwd: Path, timeout: float, *, env: dict[str, str] | None = None, detach: bool = False
    ) -> None:
        """Start `cmd`, its output in the log, and wait until `_wait_ready` finds it serving (else stop it)."""
        with self.log_path.open("wb") as log:
            self._proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=cwd, env=env, start_new_session=detach
            )
        self._pid = None
        try:
            self._wait_ready(time.monotonic() + timeout)
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self, deadline: float) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        """SIGTERM by pid, SIGKILL after 20 s; the workdir (log) is kept."""
        pid = self.pid
        if pid is not None and self.is_running():
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + 20
            while self.is_running() and time.monotonic() < deadline:
                time.sleep(0.1)
            if self.is_running():
                os.kill(pid, signal.SIGKILL)
            if self._proc is not None:
                self._proc.wait(10)
        self._proc = self._pid = None
