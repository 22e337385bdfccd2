"""Every PySpark internal the connector relies on, in one place: what differs between pyspark 4.0 and 4.3, and
what is not part of the public Data Source API at all.

Each probe answers definitely or with None ("unknown"), and every caller treats None as the safe answer: an
exactly-once write refuses to commit, filter pushdown is off, lag() and start-up fencing find no checkpoint.
Capabilities come from what the installed pyspark offers (a class, a module, a parameter), never from its
version string. tests/compat/test_spark_internals.py holds a contract test for every probe; CI runs it on each
supported pyspark, so the day a release moves what a probe reads, a test fails before a user meets it.

One internal is read elsewhere: SparkFiles' root in a worker, by formats/user_modules.py (the formats import nothing
of the connector), under the same rules and with its contract test in the same file.
"""

from __future__ import annotations

import functools
import inspect
import io
import json
import os
import pickle
import struct
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlparse

import pyarrow as pa
import pyspark
import pyspark.sql.datasource as _datasource
import pyspark.sql.types as _types
from pyspark import TaskContext
from pyspark.serializers import SpecialLengths
from pyspark.sql.pandas import types as _arrow_types
from pyspark.sql.types import DataType, StructType

# ---- Capabilities of the installed pyspark ------------------------------------------------------------------

# pyspark 4.2+: admission control (latestOffset(start, limit), ReadLimit), Trigger.AvailableNow, reportLatestOffset.
try:
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadLimit,
        ReadMaxRows,
        ReadMinRows,
        SupportsTriggerAvailableNow,
    )

    ADMISSION_CONTROL = True
except ImportError:  # pyspark 4.0/4.1: latestOffset() takes no arguments; the reader limits itself

    class ReadLimit:  # type: ignore[no-redef]
        """Stand-in for pyspark 4.2's ReadLimit: the reader hands itself its default limit."""

    @dataclass
    class ReadAllAvailable(ReadLimit):  # type: ignore[no-redef]
        pass

    @dataclass
    class ReadMinRows(ReadLimit):  # type: ignore[no-redef]
        min_rows: int

    @dataclass
    class ReadMaxRows(ReadLimit):  # type: ignore[no-redef]
        max_rows: int

    class SupportsTriggerAvailableNow:  # type: ignore[no-redef]
        """Stand-in: pyspark 4.0/4.1 never call prepareForTriggerAvailableNow (see README, Spark versions)."""

    ADMISSION_CONTROL = False

# pyspark 4.1+: batch filter pushdown (pushFilters and the Filter classes).
FILTER_PUSHDOWN = hasattr(_datasource, "Filter")
# pyspark 4.1+: a stream writer handed Arrow batches; 4.0's stream writers get rows.
STREAM_ARROW_WRITER = hasattr(_datasource, "DataSourceStreamArrowWriter")
if TYPE_CHECKING:  # the checker's pyspark is a 4.1+ one
    StreamWriter = _datasource.DataSourceStreamArrowWriter
else:
    StreamWriter = getattr(_datasource, "DataSourceStreamArrowWriter", _datasource.DataSourceStreamWriter)
# pyspark 4.1+: TIME(p).
TimeType: type[_types.TimeType] | None = getattr(_types, "TimeType", None)

__all__ = [
    "ADMISSION_CONTROL",
    "FILTER_PUSHDOWN",
    "STREAM_ARROW_WRITER",
    "ReadAllAvailable",
    "ReadLimit",
    "ReadMaxRows",
    "ReadMinRows",
    "StreamWriter",
    "SupportsTriggerAvailableNow",
    "TimeType",
]


# ---- Spark <-> Arrow types (pyspark.sql.pandas.types: not the Data Source API, and its signature moved) -------

# 4.0/4.1 take timestamp_utc (True by default), 4.2+ a timezone: both give timestamps in UTC as asked here.
_TIMEZONE = "timezone" in inspect.signature(_arrow_types.to_arrow_type).parameters


def to_arrow_type(data_type: DataType) -> pa.DataType:
    """The Arrow type pyspark exchanges a Spark type as, timestamps in UTC."""
    return _arrow_types.to_arrow_type(data_type, timezone="UTC") if _TIMEZONE else _arrow_types.to_arrow_type(data_type)


def to_arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema pyspark exchanges rows of `schema` as, timestamps in UTC."""
    if _TIMEZONE:
        return _arrow_types.to_arrow_schema(schema, timezone="UTC")
    return _arrow_types.to_arrow_schema(schema)


def from_arrow_type(arrow_type: pa.DataType) -> DataType:
    """The Spark type of an Arrow type; a timestamp without a zone is TIMESTAMP_NTZ (4.3's default, not 4.0's)."""
    return _arrow_types.from_arrow_type(arrow_type, prefer_timestamp_ntz=True)


# ---- A write task's input: did Spark end it, or cut it short? -----------------------------------------------

_END_OF_STREAM = struct.pack("!i", SpecialLengths.END_OF_STREAM)
_WORKER_FILE = os.path.realpath(os.path.join(os.path.dirname(pyspark.__file__), "worker.py"))
# The local of worker.py's `main` that holds the task's input socket: `infile` up to 4.2, `input_data_stream` in
# 4.3 (read from a message receiver).
_INPUT_STREAM_NAMES = ("input_data_stream", "infile")


def task_input_complete() -> bool | None:
    """After a write task's input iterator is exhausted: True when Spark ended it normally, False when it was cut
    short (the task is failing), None when this cannot be told.

    When a step before the writer fails, Spark closes the Python writer's input at a batch boundary, and the input
    then ends exactly like a complete one. Spark's protocol tells the two apart: after a complete input it sends
    an end-of-stream code on the worker's socket, after a failure nothing. The socket is a local of PySpark's
    worker.py, found on the stack by the worker's source file (a worker started without the daemon runs that
    file as `__main__`); the next bytes are peeked, not consumed."""
    stream = _task_input_stream(sys._getframe(1))
    if stream is None:
        return None
    head = stream.peek(len(_END_OF_STREAM))[: len(_END_OF_STREAM)]
    return bool(head) and _END_OF_STREAM.startswith(head)


def _task_input_stream(frame: Any) -> Any:
    while frame is not None:
        if _is_worker_file(frame.f_code.co_filename):
            for name in _INPUT_STREAM_NAMES:
                stream = frame.f_locals.get(name)
                if stream is not None:
                    return stream if hasattr(stream, "peek") else None
        frame = frame.f_back
    return None


def _is_worker_file(filename: str) -> bool:
    return filename == _WORKER_FILE or os.path.realpath(filename) == _WORKER_FILE


# ---- Which micro-batch a task runs for ----------------------------------------------------------------------


@dataclass(frozen=True)
class MicroBatch:
    query_id: str
    batch_id: str


# Spark's local properties naming the streaming query and micro-batch of a task (also set for batch writes inside
# foreachBatch).
_BATCH_ID, _QUERY_ID = "streaming.sql.batchId", "sql.streaming.queryId"


def task_micro_batch() -> MicroBatch | None:
    """The streaming query and micro-batch the running task belongs to; None outside a stream (or if Spark
    stopped setting the properties)."""
    context = TaskContext.get()
    if context is None:
        return None
    batch, query = context.getLocalProperty(_BATCH_ID), context.getLocalProperty(_QUERY_ID)
    return MicroBatch(query, batch) if batch and query else None


def session_query_id(spark: Any) -> str | None:
    """Inside foreachBatch on the driver: the streaming query's id (a local property of the SparkContext);
    None elsewhere (outside a stream, or over Spark Connect, whose client has no SparkContext)."""
    try:
        return spark.sparkContext.getLocalProperty(_QUERY_ID) or None
    except Exception:  # Spark Connect: no sparkContext
        return None


# ---- Whether pushdown is on for this planning call ----------------------------------------------------------


def pushdown_enabled() -> bool:
    """Whether the planning call that asks for a reader may get one with `pushFilters`.

    Spark fails every read whose reader implements `pushFilters` while `spark.sql.python.filterPushdown.enabled`
    is false, and the data source is not told that setting. The planning worker knows it: Spark runs
    `data_source_pushdown_filters` only when pushdown is on, and `plan_data_source_read` holds it in its local
    `enable_pushdown`. Read from the calling frames; anything else (pyspark 4.0, a moved worker): off, which
    costs only speed."""
    if not FILTER_PUSHDOWN:
        return False
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        # By file: a worker module run as `python -m` is named __main__.
        worker = os.path.basename(frame.f_code.co_filename)
        if worker == "data_source_pushdown_filters.py":
            return True
        if worker == "plan_data_source_read.py":
            return frame.f_locals.get("enable_pushdown") is True
        frame = frame.f_back
    return False


# ---- A streaming query's checkpoint (Spark's files) ---------------------------------------------------------


def local_checkpoint(location: str) -> Path | None:
    """The checkpoint's folder when it is on a local file system (a path or a file: URI), else None."""
    if "://" in location and not location.startswith("file:"):
        return None
    return Path(urlparse(location).path if location.startswith("file:") else location)


def checkpoint_query_id(location: str | None) -> str | None:
    """The streaming query's id from its checkpoint's `metadata` file (`{"id": ...}` on the first line); None
    when there is none yet or it is not on a local file system."""
    path = local_checkpoint(location) if location else None
    if path is None:
        return None
    try:
        found = json.loads((path / "metadata").read_text().splitlines()[0]).get("id")
    except (OSError, ValueError, IndexError, AttributeError):
        return None
    return found if isinstance(found, str) and found else None


def checkpoint_offset_batches(path: Path) -> list[Path]:
    """The offset log's files, one per planned micro-batch (named by batch id)."""
    folder = path / "offsets"
    return [p for p in folder.glob("[0-9]*") if p.name.isdigit()] if folder.is_dir() else []


def checkpoint_source_offsets(batch_file: Path) -> list[str] | None:
    """The source offsets of one offset-log file, one JSON text per source of the query ("-" for a source without
    one): the file is a version line `v1`, the batch's metadata, then a line per source. None for another
    version, which this reader does not know."""
    lines = batch_file.read_text().splitlines()
    if not lines or lines[0] != "v1":
        return None
    return lines[2:]


# ---- A MapState's calls many at a time (transformWithState's state server) -----------------------------------

# What one chunk of requests may hold before its answers are read. Far below the socket's smallest buffers, so that a
# chunk's requests are all sent even while the state server waits for us to read its answers; and no more than the
# server's input buffer (a BufferedInputStream of 8 KB): the server reads a request's bytes with one `read`, not
# readFully, so a request must never straddle two fills of that buffer, which a chunk that fits in it cannot do
# (a chunk is one write, and the next chunk is sent only once every answer of this one was read).
_CHUNK_BYTES = 8192
# A request's frame, as PySpark's client writes it (`_send_proto_message`): the protocol version (0), the length.
_FRAME = struct.Struct("!ii")


class MapStateCalls:
    """A MapState's `getValue`, `updateValue` and `removeKey` for many keys at a time.

    Each call of PySpark's MapState is one request on the state server's socket and a wait for its answer (about
    80 us here, most of it the round trip). The server reads a request, answers it and reads the next, in order,
    so requests written one after another and answers read back in that order are the same calls made one by one,
    without a round trip each. The requests are the client's messages, keys and values (pickled tuples) and frames;
    ours is doing its per-call work once per chunk: a chunk is one socket write (the client flushes each request),
    a request sets the fields of one prepared message (the client builds four), and one unpickler reads the values
    back, parsing their schema once (the client parses it from JSON for each value, and builds a Row). That halves
    the client's time per key. `map_state_calls` gives None where the client is not as read here, and the caller
    then calls the MapState one key at a time."""

    def __init__(self, state: Any) -> None:
        from pyspark.sql.streaming.proto import StateMessage_pb2

        self._proto = StateMessage_pb2
        self._name: str = state._stateName
        self._client = state._mapStateClient
        self._api = self._client._stateful_processor_api_client
        self._key_schema: StructType = self._client.user_key_schema
        self._value_schema: StructType = self._client.value_schema
        self._key_bytes, self._value_bytes = self._serializer(self._key_schema), self._serializer(self._value_schema)

    def _requests(self, call: str, **fields: Sequence[bytes]) -> list[bytes]:
        """Requests of one MapStateCall kind (getValue, ...), the i-th with its message's fields set to each's i-th."""
        message = getattr(self._proto, call[0].upper() + call[1:])()
        request = self._proto.StateRequest(
            stateVariableRequest=self._proto.StateVariableRequest(
                mapStateCall=self._proto.MapStateCall(stateName=self._name, **{call: message})
            )
        )
        into = getattr(request.stateVariableRequest.mapStateCall, call)  # the message inside the request
        out = []
        for values in zip(*fields.values(), strict=True):
            for name, value in zip(fields, values):
                setattr(into, name, value)
            out.append(request.SerializeToString())
        return out

    def _serializer(self, schema: StructType) -> Callable[[tuple[Any, ...]], bytes]:
        """A key's or value's bytes as the client's `_serialize_to_bytes` gives them: a pickled tuple of the values,
        converted first only where a field's type needs it (the helpers' strings, numbers and lists need none)."""
        if _converted(schema):
            return functools.partial(self._api._serialize_to_bytes, schema)
        dumps = self._api.pickleSer.dumps
        return lambda row: dumps(tuple(row))

    def _exchange(self, requests: list[bytes]) -> list[tuple[int, str, bytes]]:
        answers: list[tuple[int, str, bytes]] = []
        start = 0
        while start < len(requests):
            end, size = start, 0
            while end < len(requests) and (
                end == start or size + _FRAME.size + len(requests[end]) <= _CHUNK_BYTES
            ):  # fmt: skip
                size += _FRAME.size + len(requests[end])
                end += 1
            chunk = requests[start:end]
            self._api.sockfile.write(b"".join(_FRAME.pack(0, len(r)) + r for r in chunk))
            self._api.sockfile.flush()
            answers.extend(self._api._receive_proto_message() for _ in chunk)
            start = end
        return answers

    def get_values(self, keys: Sequence[tuple[Any, ...]]) -> list[tuple[Any, ...] | None]:
        """Each key's value, None where the map holds none (or its TTL expired it)."""
        requests = self._requests("getValue", userKey=[self._key_bytes(k) for k in keys])
        found: list[bytes] = []
        for status, error, value in self._exchange(requests):
            if status != 0:
                raise RuntimeError(f"the state store refused to read a value: {error}")
            found.append(value)
        rows = iter(_unpickled_rows([v for v in found if v]))
        return [next(rows) if v else None for v in found]

    def update_values(self, keys: Sequence[tuple[Any, ...]], values: Sequence[tuple[Any, ...]]) -> None:
        put = [self._key_bytes(k) for k in keys]
        data = [self._value_bytes(v) for v in values]
        self._check(self._requests("updateValue", userKey=put, value=data), "write a value")

    def remove_keys(self, keys: Sequence[tuple[Any, ...]]) -> None:
        requests = self._requests("removeKey", userKey=[self._key_bytes(k) for k in keys])
        self._check(requests, "remove a key")

    def _check(self, requests: list[bytes], what: str) -> None:
        for status, error, _ in self._exchange(requests):
            if status != 0:
                raise RuntimeError(f"the state store refused to {what}: {error}")


def _converted(schema: StructType) -> bool:
    """Whether a value of this struct needs PySpark's conversion to or from its pickled form (a date, a timestamp, a
    decimal: `needConversion`), or is its tuple of Python values as it is."""
    return any(f.dataType.needConversion() for f in schema.fields)


@functools.lru_cache(maxsize=64)
def _row_maker(schema_json: str) -> Callable[..., tuple[Any, ...]]:
    """What a pickled Row of this schema is made with here: a tuple of its values, converted as `fromInternal`."""
    schema = cast(StructType, _types._parse_datatype_json_string(schema_json))
    if _converted(schema):
        return lambda *values: tuple(schema.fromInternal(values))
    return lambda *values: values


class _RowsUnpickler(pickle.Unpickler):
    """The JVM pickles a state value as a call of `_create_row_inbound_converter(_parse_datatype_json_string(json))`
    with the row's values (EvaluatePython's row pickler): here the two globals give `_row_maker(json)`, parsed once
    per schema, where PySpark's parse the JSON for every value and build a Row. Any other global is pickle's own."""

    def find_class(self, module: str, name: str) -> Any:
        if module == "pyspark.sql.types" and name == "_parse_datatype_json_string":
            return _row_maker
        if module == "pyspark.sql.types" and name == "_create_row_inbound_converter":
            return _as_is
        return super().find_class(module, name)


def _as_is(maker: Any) -> Any:
    return maker


def _unpickled_rows(values: list[bytes]) -> list[tuple[Any, ...]]:
    """State values the server answered, each a pickle, as tuples: one unpickler reads them one after another."""
    unpickler = _RowsUnpickler(io.BytesIO(b"".join(values)))
    return [unpickler.load() for _ in values]


def map_state_calls(state: Any) -> MapStateCalls | None:
    """Many-at-a-time calls of a MapState of `transformWithStateInPandas`'s handle; None when this pyspark's client
    is not what MapStateCalls reads (the caller then uses the MapState's own one-key calls)."""
    try:
        calls = MapStateCalls(state)
        api = calls._api
        used = [api._receive_proto_message, api._serialize_to_bytes, api.pickleSer.dumps, api.sockfile.write]
        used.append(api.sockfile.flush)
        messages = ("StateRequest", "StateVariableRequest", "MapStateCall", "GetValue", "UpdateValue", "RemoveKey")
        schemas = (calls._key_schema, calls._value_schema)
    except (ImportError, AttributeError):
        return None
    known = all(callable(f) for f in used) and all(hasattr(calls._proto, m) for m in messages)
    return calls if known and all(isinstance(s, StructType) for s in schemas) else None
