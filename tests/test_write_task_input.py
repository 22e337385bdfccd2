"""connector.task_input tells a complete write input from one Spark cut short (pure logic: PySpark's worker
frame and socket stood in for by a function in a module named like it and an in-memory stream)."""

from __future__ import annotations

import io
import struct

from connector.task_input import input_complete

_WORKER_CODE = """
def process(input_data_stream, check):
    return check()
"""


def _in_worker(stream: io.BufferedReader) -> bool | None:
    worker = {"__name__": "pyspark.worker"}
    exec(_WORKER_CODE, worker)
    return worker["process"](stream, input_complete)


def test_input_followed_by_sparks_end_of_stream_code_is_complete():
    stream = io.BufferedReader(io.BytesIO(struct.pack("!i", -4)))
    assert _in_worker(stream) is True
    assert stream.read() == struct.pack("!i", -4), "the code is left for PySpark's worker to read"


def test_input_ending_at_a_closed_socket_was_cut_short():
    assert _in_worker(io.BufferedReader(io.BytesIO(b""))) is False


def test_outside_a_pyspark_worker_completeness_is_unknown():
    assert input_complete() is None
