"""Did Spark hand this write task its whole input, or did the input stop because the task is failing?

When a step before the writer fails (a UDF raising, a fetch failing), Spark closes the Python writer's input
at a batch boundary, and the Arrow stream then ends exactly like a complete one: `write()` sees its iterator
end normally. Committing then would make a partial task look written — with exactly-once, its marker
would even keep the retry from writing the rest. Spark's protocol tells the two apart: after a complete
input it sends an end-of-stream code on the worker's socket, after a failure it sends nothing and
closes it. This module looks at those next bytes (without consuming them) once the input is exhausted.

The socket is not part of the Data Source API: it is the local `input_data_stream` of PySpark's worker code
(4.x), found on the stack by the worker's source file rather than its module name, because a worker started
without the daemon (`spark.python.use.daemon=false`) runs that file as `__main__`. When it is not there the
answer is "unknown" (None), and an exactly-once write then refuses to commit (write.task).
"""

from __future__ import annotations

import os
import struct
import sys
from typing import Any

import pyspark
from pyspark.serializers import SpecialLengths

_END_OF_STREAM = struct.pack("!i", SpecialLengths.END_OF_STREAM)
_WORKER_FILE = os.path.realpath(os.path.join(os.path.dirname(pyspark.__file__), "worker.py"))
_STREAM_NAME = "input_data_stream"


def input_complete() -> bool | None:
    """After a task's input iterator is exhausted: True when Spark ended it normally, False when it was cut
    short (the task is failing), None when this cannot be told (not in a PySpark worker)."""
    stream = _input_stream()
    if stream is None:
        return None
    head = stream.peek(len(_END_OF_STREAM))[: len(_END_OF_STREAM)]
    return bool(head) and _END_OF_STREAM.startswith(head)


def _input_stream() -> Any:
    frame = sys._getframe(1)
    while frame is not None:
        if _is_worker_file(frame.f_code.co_filename) and _STREAM_NAME in frame.f_locals:
            stream = frame.f_locals[_STREAM_NAME]
            return stream if hasattr(stream, "peek") else None
        frame = frame.f_back
    return None


def _is_worker_file(filename: str) -> bool:
    return filename == _WORKER_FILE or os.path.realpath(filename) == _WORKER_FILE
