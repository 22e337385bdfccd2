"""connector.task_input tells a complete write input from one Spark cut short (pure logic: PySpark's worker
frame and socket stood in for by a function compiled as PySpark's worker file and an in-memory stream; the
real worker, with and without the daemon, is in tests/write/test_write_exactly_once.py)."""

from __future__ import annotations

import io
import struct

import pytest
from pyspark_upsert_kafka.write import task_input
from pyspark_upsert_kafka.write.task_input import input_complete

_WORKER_CODE = """
def process(input_data_stream, check):
    return check()
"""


def _in_worker(stream: io.BufferedReader, module: str = "pyspark.worker") -> bool | None:
    worker = {"__name__": module}
    exec(compile(_WORKER_CODE, task_input._WORKER_FILE, "exec"), worker)
    return worker["process"](stream, input_complete)


# A worker forked by PySpark's daemon runs the module pyspark.worker; one started without the daemon
# (spark.python.use.daemon=false) runs the same file as __main__.
@pytest.mark.parametrize("module", ["pyspark.worker", "__main__"])
def test_input_followed_by_sparks_end_of_stream_code_is_complete(module):
    stream = io.BufferedReader(io.BytesIO(struct.pack("!i", -4)))
    assert _in_worker(stream, module) is True
    assert stream.read() == struct.pack("!i", -4), "the code is left for PySpark's worker to read"


def test_input_ending_at_a_closed_socket_was_cut_short():
    assert _in_worker(io.BufferedReader(io.BytesIO(b""))) is False


def test_outside_a_pyspark_worker_completeness_is_unknown():
    assert input_complete() is None
