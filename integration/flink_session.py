"""The Flink side of the golden corpus and of the tables benchmark: a PyFlink session in its own venv, and what its
callers share. integration/flink_golden.py (the corpus' cases and its command), integration/flink_golden_tables.py
(the tables_* cases) and integration/bench_tables_flink.py (Flink's side of the tables benchmark) build on it; it
imports none of them.

- Fetching Flink, first use only, into ~/.cache/pyspark-upsert-kafka/flink/ (PYSPARK_UPSERT_KAFKA_CACHE): a venv with
  PyPI's apache-flink (ensure_flink_venv; its pins clash with pyspark's: never the project's .venv) and the jars of
  integration/flink/pom.xml (ensure_flink_jars; try_confluent_jars for avro-confluent's, where Confluent's Maven
  repository answers).
- FlinkSession: integration/flink/golden_job.py (or another script speaking its protocol, flink/bench_job.py) run by
  the Flink venv's python, one JSON request a line, each answer awaited with a timeout; FlinkJobError, Flink's refusal.
- What the cases share: the fixed Kafka timestamps (BASE_TS), topics made and read back (create_topic, consume_all),
  a changelog folded by key (fold), a quoted Flink name (q), a UTC wall clock's epoch microseconds (micros).

Test/dev tooling only: the product never imports this module.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from integration import kafka
from integration.kafka import CACHE_DIR, fetch_maven_jars, run_command

FLINK_VERSION = "2.2.1"
ROOT = Path(__file__).resolve().parent.parent
FLINK_DIR = ROOT / "integration" / "flink"
JOB = FLINK_DIR / "golden_job.py"
CANONICAL = ROOT / "tests" / "support" / "flink_golden.py"
CACHE = CACHE_DIR / "flink"
VENV = CACHE / f"venv-{FLINK_VERSION}"
JARS = CACHE / f"jars-{FLINK_VERSION}"
CONFLUENT_JARS = CACHE / f"confluent-jars-{FLINK_VERSION}"
MARK = "@@golden@@ "
BASE_TS = 1_704_067_200_000  # 2024-01-01T00:00:00Z: change n gets BASE_TS + n seconds as its Kafka timestamp


def log(msg: str) -> None:
    print(f"[flink_golden {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ---------------------------------------------------------------------------------------------------------------
# Fetching Flink (first use only)


def ensure_flink_venv() -> Path:
    """The Flink venv's python, made with `pip install apache-flink==2.2.1` when absent."""
    python, stamp = VENV / "bin" / "python", VENV / f".installed-apache-flink-{FLINK_VERSION}"
    if stamp.is_file():
        return python
    log(f"installing apache-flink=={FLINK_VERSION} into {VENV} (first use: minutes)")
    CACHE.mkdir(parents=True, exist_ok=True)
    base = os.environ.get("FLINK_GOLDEN_PYTHON") or shutil.which("python3") or sys.executable
    if not python.is_file():
        run_command([base, "-m", "venv", str(VENV)], "creating the Flink venv")
    run_command([str(python), "-m", "pip", "install", "-q", "--upgrade", "pip"], "pip upgrade in the Flink venv")
    run_command(
        [str(python), "-m", "pip", "install", "-q", f"apache-flink=={FLINK_VERSION}"], "pip install apache-flink"
    )
    stamp.touch()
    return python


def ensure_flink_jars() -> list[Path]:
    return sorted(fetch_maven_jars(FLINK_DIR / "pom.xml", JARS, "mvn fetching Flink's jars").glob("*.jar"))


def try_confluent_jars() -> tuple[list[Path], str]:
    """flink-avro-confluent-registry's jars, or [] and why not (Confluent's own Maven repository unreachable)."""
    try:
        jars = fetch_maven_jars(FLINK_DIR / "pom-confluent.xml", CONFLUENT_JARS, "mvn fetching avro-confluent's jars")
        return sorted(jars.glob("*.jar")), "fetched"
    except RuntimeError as e:
        text = str(e)
        for mark in ("Unknown host", "transfer failed", "Could not transfer", "ERROR"):
            if mark in text:
                start = text.index(mark)
                return [], text[start : text.find("\n", start) if "\n" in text[start:] else None][:300]
        return [], text.splitlines()[0][:300]


# ---------------------------------------------------------------------------------------------------------------
# The PyFlink session (a child process of the Flink venv)


class FlinkJobError(RuntimeError):
    def __init__(self, answer: dict[str, Any]) -> None:
        super().__init__(answer.get("error", "?"))
        self.answer = answer


class FlinkSession:
    """integration/flink/golden_job.py in the Flink venv, one JSON request per line, each answer awaited with a
    timeout; its own process group, ended by pid when done."""

    def __init__(
        self,
        python: Path,
        jars: list[Path],
        workdir: Path,
        timeout: float = 240,
        job: Path = JOB,
        settings: dict[str, Any] | None = None,
    ) -> None:
        """`job`: the script the Flink venv runs (another one speaks the same protocol: flink/bench_job.py), given a
        config file of the jars and `settings`."""
        self.workdir = workdir
        config = workdir / f"{job.stem}.json"
        settings = {"canonical": str(CANONICAL)} if settings is None else settings
        config.write_text(json.dumps({"jars": [str(j) for j in jars], **settings}))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "VIRTUAL_ENV", "SPARK_"))}
        env["PATH"] = f"{python.parent}{os.pathsep}{env.get('PATH', '')}"
        env["TZ"] = "UTC"
        self.log_path = workdir / "flink-job.log"
        self._log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            [str(python), str(job), str(config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            cwd=workdir,
            env=env,
            start_new_session=True,
        )
        self._answers: queue.Queue[dict[str, Any] | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        self._next(timeout)

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", "replace")
            if line.startswith(MARK):
                self._answers.put(json.loads(line[len(MARK) :]))
            else:
                self._log.write(raw)
                self._log.flush()
        self._answers.put(None)

    def _next(self, timeout: float) -> dict[str, Any]:
        try:
            answer = self._answers.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"no answer from the Flink session in {timeout:.0f} s; log {self.log_path}") from None
        if answer is None:
            raise RuntimeError(f"the Flink session exited (code {self.proc.wait(10)}); log {self.log_path}")
        return answer

    def request(self, op: str, timeout: float = 180, **args: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps({"op": op, **args}) + "\n").encode())
        self.proc.stdin.flush()
        answer = self._next(timeout)
        if "error" in answer:
            raise FlinkJobError(answer)
        return answer

    def close(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            assert self.proc.stdin is not None
            self.proc.stdin.write(b'{"op": "quit"}\n')
            self.proc.stdin.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)  # the group of the session we started (python + its JVM)
            self.proc.wait(10)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)  # a JVM left behind by a python that exited
        self._log.close()


# ---------------------------------------------------------------------------------------------------------------
# What the cases share


def q(name: str) -> str:
    return "`" + name + "`"


def micros(text: str) -> int:
    """Epoch microseconds of a UTC wall clock 'YYYY-MM-DDTHH:MM:SS.ffffff'."""
    wall = dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%f")
    return (wall - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    """A golden case's topic: every record kept, each with the timestamp its writer gave."""
    kafka.create_topic(bootstrap, topic, partitions, {"retention.ms": "-1", "message.timestamp.type": "CreateTime"})


def consume_all(bootstrap: str, topic: str, partitions: int, timeout: float = 60) -> list[dict[str, Any]]:
    """Every record of the topic, in offset order per partition (partition order first)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "flink-golden", "enable.auto.commit": False}
        | {"enable.partition.eof": False, "isolation.level": "read_committed"}
    )
    try:
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(partitions)}
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions) if ends[p] > 0])
        got: dict[int, list[dict[str, Any]]] = {p: [] for p in range(partitions)}
        deadline = time.monotonic() + timeout
        while any((got[p][-1]["offset"] + 1 if got[p] else 0) < ends[p] for p in range(partitions)):
            if time.monotonic() > deadline:
                raise TimeoutError(f"reading {topic}: got {[len(v) for v in got.values()]} of {ends}")
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                raise RuntimeError(f"reading {topic}: {msg.error()}")
            got[msg.partition()].append(
                {
                    "partition": msg.partition(),
                    "offset": msg.offset(),
                    "key": None if msg.key() is None else msg.key().hex(),
                    "value": None if msg.value() is None else msg.value().hex(),
                    "timestamp": msg.timestamp()[1],
                    "headers": [[k, (v or b"").hex()] for k, v in (msg.headers() or [])],
                }
            )
        return [r for p in range(partitions) for r in got[p]]
    finally:
        consumer.close()


def fold(rows: list[dict[str, Any]], key: list[str]) -> list[dict[str, Any]]:
    """A changelog folded into the final table, sorted by the key."""
    table: dict[tuple[Any, ...], dict[str, Any]] = {}
    for change in rows:
        k = tuple(change["row"][c] for c in key)
        if change["kind"] in ("+I", "+U"):
            table[k] = change["row"]
        else:
            table.pop(k, None)
    return [table[k] for k in sorted(table, key=lambda k: tuple((v is not None, v) for v in k))]
