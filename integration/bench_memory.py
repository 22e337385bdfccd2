"""Peak memory of Spark's Python workers, sampled from /proc while a block runs (Linux only).

Spark forks its Python workers from `pyspark.daemon`; they keep its command line, which is how they are
found, among the descendants of this process (other Spark applications on the machine are not counted).
Workers are reused across tasks, so the figure is their peak resident set during the block.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

_PAGE_MB = 1 / 1024  # VmRSS is in kB


def _descendants(root: int) -> set[int]:
    parents: dict[int, int] = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:  # the parent pid is the field after the ')' that closes the command name
                parents[int(proc.name)] = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    found, frontier = set(), {root}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _worker_rss_mb() -> list[float]:
    out = []
    for pid in _descendants(os.getpid()):
        proc = Path("/proc") / str(pid)
        try:
            if b"pyspark.daemon" not in (proc / "cmdline").read_bytes():
                continue
            for line in (proc / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    out.append(int(line.split()[1]) * _PAGE_MB)
        except OSError:  # the process ended meanwhile
            continue
    return out


class PythonWorkerMemory:
    """`with PythonWorkerMemory() as m: ...`, then m.peak_worker_mb (largest worker) and m.peak_total_mb."""

    def __init__(self, interval_s: float = 0.05) -> None:
        self.interval_s = interval_s
        self.peak_worker_mb = self.peak_total_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(self.interval_s):
            sizes = _worker_rss_mb()
            if sizes:
                self.peak_worker_mb = max(self.peak_worker_mb, max(sizes))
                self.peak_total_mb = max(self.peak_total_mb, sum(sizes))

    def __enter__(self) -> PythonWorkerMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
