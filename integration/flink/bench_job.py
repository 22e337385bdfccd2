"""A real Apache Flink 2.2.1 table session for the tables benchmark, driven line by line by
integration/bench_tables_flink.py (through integration/flink_session.py's FlinkSession: the same protocol as
golden_job.py, one JSON request per line on stdin, each answer one line on stdout prefixed with `@@golden@@ `).

Runs under the Flink venv's python (PyFlink 2.2.1, never the project's venv):

    <flink venv>/bin/python integration/flink/bench_job.py <config.json>

config.json: {"jars": [...], "parallelism": 2, "checkpoints": null | "<file:// folder>"}. Every job runs with
`parallelism.default` = the given parallelism and `state.backend.type` = rocksdb. With "checkpoints" the session is
the state probe's: incremental RocksDB checkpoints every second into that folder, and the per-job MiniCluster's REST
endpoint on a free port of 127.0.0.1 (where the checkpoints' sizes and the vertices' record counts are read).
Requests ("op"):

- `sql`: {"statements": [...]} runs DDL statements.
- `plan`: {"statement", "config"} the "Optimized Physical Plan" lines of EXPLAIN (CHANGELOG_MODE).
- `time`: {"statement", "config", "timeout_s"} runs an INSERT over bounded sources to its end:
  execute_sql(statement).wait(); answers the seconds from the call to its end (planning and job start included).
- `state`: {"statement", "config", "records", "timeout_s"} (checkpointing session only) runs an INSERT over unbounded
  sources, waits until its sources emitted `records` rows and every other vertex read `records` rows (true of the
  benchmark's jobs: one record per key, each key one row downstream), then for the first checkpoint triggered after
  that; answers its full state size (RocksDB files referenced, all vertices), the size per vertex, and cancels the
  job.
- `start`: {"statement", "config"} submits an INSERT over unbounded sources and answers once it is submitted (the
  steady benchmark's job: it runs until `cancel`).
- `cancel`: cancels the job `start` submitted.
- `quit`.

"config" {key: value}: table settings for this request only, put back afterwards (to their value before, or to
Flink's default in CONFIG_DEFAULTS).
"""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import time
import urllib.request
from typing import Any

from golden_job import (  # the same protocol as the golden job's (run from this folder: its sys.path[0])
    serve,
    table_settings,
)
from pyflink.common import Configuration
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.table import ExplainDetail, StreamTableEnvironment

CONFIG_DEFAULTS = {"table.exec.source.cdc-events-duplicate": "false"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Session:
    def __init__(self, config: dict[str, Any]) -> None:
        conf = Configuration()
        conf.set_string("pipeline.jars", ";".join("file://" + j for j in config["jars"]))
        conf.set_string("parallelism.default", str(config["parallelism"]))
        conf.set_string("state.backend.type", "rocksdb")
        self.rest = None
        if config.get("checkpoints"):
            # Incremental: a checkpoint's full size is then the RocksDB files it references (as Spark's SST size).
            conf.set_string("execution.checkpointing.interval", "1 s")
            conf.set_string("execution.checkpointing.dir", config["checkpoints"])
            conf.set_string("execution.checkpointing.incremental", "true")
            conf.set_string("metrics.fetcher.update-interval", "500 ms")  # the vertices' counts, fresh enough
            port = _free_port()
            conf.set_string("rest.address", "127.0.0.1")
            conf.set_string("rest.bind-address", "127.0.0.1")
            conf.set_string("rest.port", str(port))
            self.rest = f"http://127.0.0.1:{port}"
        self.env = StreamExecutionEnvironment.get_execution_environment(conf)
        self.tenv = StreamTableEnvironment.create(self.env)

    def _config(self, config: dict[str, str] | None) -> Any:
        return table_settings(self.tenv, config, CONFIG_DEFAULTS)

    def op_sql(self, req: dict[str, Any]) -> dict[str, Any]:
        for stmt in req["statements"]:
            self.tenv.execute_sql(stmt)
        return {"ok": True}

    def op_plan(self, req: dict[str, Any]) -> dict[str, Any]:
        with self._config(req.get("config")):
            text = self.tenv.explain_sql(req["statement"], ExplainDetail.CHANGELOG_MODE)
        lines = text.splitlines()
        start = lines.index("== Optimized Physical Plan ==") + 1
        end = next((i for i in range(start, len(lines)) if lines[i].startswith("== ")), len(lines))
        return {"plan": [line.rstrip() for line in lines[start:end] if line.strip()]}

    def op_time(self, req: dict[str, Any]) -> dict[str, Any]:
        started = time.perf_counter()
        with self._config(req.get("config")):
            result = self.tenv.execute_sql(req["statement"])
        try:
            result.wait(int(req.get("timeout_s", 600) * 1000))
        except Exception:
            self._cancel(result)
            raise
        return {"seconds": round(time.perf_counter() - started, 3)}

    def op_start(self, req: dict[str, Any]) -> dict[str, Any]:
        if getattr(self, "running", None) is not None:
            raise RuntimeError("start: a job is running (cancel it first)")
        with self._config(req.get("config")):
            self.running = self.tenv.execute_sql(req["statement"])
        return {"job": str(self.running.get_job_client().get_job_id())}

    def op_cancel(self, req: dict[str, Any]) -> dict[str, Any]:
        running, self.running = getattr(self, "running", None), None
        if running is not None:
            self._cancel(running)
        return {"ok": True}

    def _cancel(self, result: Any) -> None:
        client = result._j_table_result.getJobClient()
        if client.isPresent():
            with contextlib.suppress(Exception):
                client.get().cancel().get()

    def _get(self, path: str) -> Any:
        with urllib.request.urlopen(self.rest + path, timeout=5) as answer:
            return json.load(answer)

    def op_state(self, req: dict[str, Any]) -> dict[str, Any]:
        if self.rest is None:
            raise RuntimeError("state: this session takes no checkpoints (config 'checkpoints')")
        with self._config(req.get("config")):
            result = self.tenv.execute_sql(req["statement"])
        job = str(result.get_job_client().get_job_id())
        deadline = time.monotonic() + req.get("timeout_s", 600)
        try:
            return self._drained_checkpoint(job, req["records"], deadline)
        finally:
            self._cancel(result)

    def _drained_checkpoint(self, job: str, records: int, deadline: float) -> dict[str, Any]:
        """The first checkpoint triggered once every vertex has every record (the state then holds them all)."""
        counts: dict[str, int] = {}
        drained_ms = None
        while time.monotonic() < deadline:
            time.sleep(0.5)
            try:
                vertices = self._get(f"/jobs/{job}")["vertices"]
            except OSError:  # the REST endpoint comes up with the job's MiniCluster
                continue
            if drained_ms is None:
                sources = [v for v in vertices if v["name"].startswith("Source")]
                counts = {v["name"]: v["metrics"]["read-records"] for v in vertices if v not in sources}
                emitted = sum(v["metrics"]["write-records"] for v in sources)
                if emitted >= records and min(counts.values(), default=records) >= records:
                    drained_ms = time.time() * 1000
                continue
            history = self._get(f"/jobs/{job}/checkpoints").get("history", [])
            done = [h for h in history if h["status"] == "COMPLETED" and h["trigger_timestamp"] >= drained_ms]
            if done:
                first = min(done, key=lambda h: h["id"])
                tasks = self._get(f"/jobs/{job}/checkpoints/details/{first['id']}")["tasks"]
                names = {v["id"]: v["name"] for v in vertices}
                return {
                    "bytes": first["state_size"],
                    "checkpoint": first["id"],
                    "vertices": {names.get(k, k): t.get("state_size", 0) for k, t in tasks.items()},
                    "read_records": {v["name"]: v["metrics"]["read-records"] for v in vertices},
                }
        raise TimeoutError(f"state: no checkpoint after the job drained (counts {counts}, drained {drained_ms})")


def main() -> int:
    with open(sys.argv[1]) as f:
        config = json.load(f)
    return serve(Session(config))


if __name__ == "__main__":
    sys.exit(main())
