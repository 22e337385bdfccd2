"""A Spark Connect server for the declarative pipeline (integration/pipeline/): `spark-pipelines run --remote` talks
to it. The harness starts it rather than letting `spark-pipelines` start its own, which listens on every interface
on the fixed port 15002 (two runs side by side collide, and the port is open beyond the machine): this one listens on
127.0.0.1 on a free port, with the UI off, and its folder holds the pipeline's storage and tables."""

from __future__ import annotations

import os
import socket
import sys
import time
from pathlib import Path

from integration.kafka import free_ports, log_excerpt
from integration.process import ServerProcess

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


class ConnectServer(ServerProcess):
    """`spark-submit` of Spark's Connect server from this venv's pyspark, its Python workers this interpreter."""

    log_name = "connect-server.log"
    command_mark = SERVER_CLASS.encode()

    def __init__(self, workdir: Path) -> None:
        super().__init__(workdir)
        self.port = 0

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    @property
    def warehouse(self) -> Path:
        """Where the pipeline's tables are (spark.sql.warehouse.dir)."""
        return self.workdir / "spark-warehouse"

    def start(self, timeout: float = 120) -> None:
        import pyspark

        if self.is_running():
            raise RuntimeError(f"Spark Connect server already running (pid {self.pid})")
        self.workdir.mkdir(parents=True, exist_ok=True)
        (self.port,) = free_ports(1)
        settings = {
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": str(self.port),
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.driver.host": "127.0.0.1",
            "spark.ui.enabled": "false",
            "spark.sql.warehouse.dir": self.warehouse.as_uri(),
        }
        submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
        confs = [arg for key, value in settings.items() for arg in ("--conf", f"{key}={value}")]
        cmd = [str(submit), "--class", SERVER_CLASS, "--master", "local[2]", "--driver-memory", "1g", *confs]
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_HOME": str(submit.parent.parent)}
        self._start_process([*cmd, "spark-internal"], self.workdir, timeout, env=env)

    def _wait_ready(self, deadline: float) -> None:
        while self.is_running() and time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.3)
        why = "did not listen in time" if self.is_running() else "exited"
        raise RuntimeError(f"Spark Connect server {why}; log {self.log_path}:\n{log_excerpt(self.log_path)}")

    def __enter__(self) -> ConnectServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
