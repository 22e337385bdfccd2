"""Contract tests of connector/spark_internals.py: each probe of a PySpark internal answers right inside real
Spark processes of the installed pyspark. CI runs them on every supported pyspark, so a release that moves what a
probe reads fails here first."""

from __future__ import annotations

import importlib.util
import io
import json
import struct
import zipfile
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest
from pyspark.sql import functions as F
from pyspark.sql.datasource import DataSourceStreamWriter
from pyspark.sql.streaming.stateful_processor import StatefulProcessor
from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampNTZType, TimestampType
from pyspark_upsert_kafka import spark_internals
from pyspark_upsert_kafka.formats.user_modules import shipped_files_root
from pyspark_upsert_kafka.tables.map_entries import MapEntries

from tests.support.read_helpers import finish_available_now, wait_for
from tests.workers.internals_probe import InternalsProbe

PUSHDOWN = "spark.sql.python.filterPushdown.enabled"


@pytest.fixture(scope="module")
def probe(spark):
    spark.dataSource.register(InternalsProbe)
    return spark


def _reports(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


# ---- Capabilities: detected from what pyspark offers --------------------------------------------------------


def test_capabilities_are_those_the_installed_pyspark_offers():
    import pyspark.sql.datasource as ds
    import pyspark.sql.types as types

    assert (
        importlib.util.find_spec("pyspark.sql.streaming.datasource") is not None
    ) == spark_internals.ADMISSION_CONTROL
    assert hasattr(ds, "Filter") == spark_internals.FILTER_PUSHDOWN
    assert hasattr(ds, "DataSourceStreamArrowWriter") == spark_internals.STREAM_ARROW_WRITER
    assert spark_internals.TimeType is getattr(types, "TimeType", None)
    assert issubclass(spark_internals.StreamWriter, DataSourceStreamWriter)


def test_without_admission_control_the_streaming_runner_calls_latest_offset_with_no_arguments():
    """pyspark 4.0/4.1's runner calls `reader.latestOffset()`; 4.2+ picks the call by the method's signature, so
    the reader's latestOffset(start=None, limit=None) gets the admission-control call there."""
    import pyspark.sql.streaming.python_streaming_source_runner as runner

    source = Path(runner.__file__).read_text()
    if spark_internals.ADMISSION_CONTROL:
        assert "inspect.signature(reader.latestOffset)" in source
        assert "reader.latestOffset(start_offset_dict, limit_obj)" in source
    else:
        assert "offset = reader.latestOffset()" in source
        assert "inspect.signature" not in source


# ---- Spark <-> Arrow types ----------------------------------------------------------------------------------


def test_arrow_schema_has_utc_timestamps_and_types_round_trip():
    schema = StructType([StructField("ts", TimestampType()), StructField("local", TimestampNTZType())])
    arrow = spark_internals.to_arrow_schema(schema)
    assert arrow.field("ts").type == pa.timestamp("us", tz="UTC")
    assert arrow.field("local").type == pa.timestamp("us")
    assert spark_internals.to_arrow_type(TimestampType()) == pa.timestamp("us", tz="UTC")
    assert spark_internals.from_arrow_type(pa.timestamp("us", tz="UTC")) == TimestampType()
    assert spark_internals.from_arrow_type(pa.timestamp("us")) == TimestampNTZType()


# ---- A write task's input, and its micro-batch (a real cut-short input: tests/write/test_write_exactly_once.py)


# PySpark's worker frame and socket stood in for by a function compiled as PySpark's worker file, holding the
# socket under the local name pyspark 4.0-4.2 (`infile`) or 4.3 (`input_data_stream`) give it.
_WORKER_CODE = """
def process({name}, check):
    return check()
"""


def _in_worker(stream: io.BufferedReader, name: str, module: str = "pyspark.worker") -> bool | None:
    worker = {"__name__": module}
    exec(compile(_WORKER_CODE.format(name=name), spark_internals._WORKER_FILE, "exec"), worker)
    return worker["process"](stream, spark_internals.task_input_complete)


# A worker forked by PySpark's daemon runs the module pyspark.worker; one started without the daemon
# (spark.python.use.daemon=false) runs the same file as __main__.
@pytest.mark.parametrize("module", ["pyspark.worker", "__main__"])
@pytest.mark.parametrize("name", ["infile", "input_data_stream"])
def test_input_followed_by_sparks_end_of_stream_code_is_complete(module, name):
    stream = io.BufferedReader(io.BytesIO(struct.pack("!i", -4)))
    assert _in_worker(stream, name, module) is True
    assert stream.read() == struct.pack("!i", -4), "the code is left for PySpark's worker to read"


@pytest.mark.parametrize("name", ["infile", "input_data_stream"])
def test_input_ending_at_a_closed_socket_was_cut_short(name):
    assert _in_worker(io.BufferedReader(io.BytesIO(b"")), name) is False


def test_a_socket_under_another_name_is_unknown():
    assert _in_worker(io.BufferedReader(io.BytesIO(struct.pack("!i", -4))), "renamed_stream") is None


def test_the_installed_workers_main_holds_its_input_under_a_name_the_probe_knows():
    """The real worker.py: the name the probe looks for is where this pyspark keeps the task's input."""
    source = Path(spark_internals._WORKER_FILE).read_text()
    assert any(f"load_stream({name})" in source for name in spark_internals._INPUT_STREAM_NAMES)


def test_a_batch_write_task_sees_its_complete_input_and_no_micro_batch(probe, tmp_path):
    out = tmp_path / "reports"
    probe.range(0, 100, 1, 2).selectExpr("cast(id as int) id").write.format("internals-probe").option(
        "out", str(out)
    ).mode("append").save()
    reports = _reports(out)
    assert [r["input_complete"] for r in reports] == [True, True]
    assert sum(r["rows"] for r in reports) == 100
    assert all(r["micro_batch"] is None for r in reports)


def test_a_stream_write_task_knows_its_query_and_micro_batch(probe, tmp_path):
    out = tmp_path / "reports"
    query = (
        probe.readStream.format("rate")
        .option("rowsPerSecond", 50)
        .load()
        .select(F.col("value").cast("int").alias("id"))
        .writeStream.format("internals-probe")
        .option("out", str(out))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(processingTime="100 milliseconds")
        .start()
    )
    try:
        wait_for(lambda: len({r["commit_batch"] for r in _reports(out)}) >= 2, "two committed micro-batches")
    finally:
        query.stop()
    reports = _reports(out)
    assert all(r["micro_batch"] == {"query_id": query.id, "batch_id": str(r["commit_batch"])} for r in reports)
    assert all(r["input_complete"] is True for r in reports)
    # The same query's id is in its checkpoint, where a restarted stream writer reads it.
    assert spark_internals.checkpoint_query_id(str(tmp_path / "checkpoint")) == query.id
    assert spark_internals.checkpoint_query_id("file://" + str(tmp_path / "checkpoint")) == query.id
    assert spark_internals.checkpoint_query_id(str(tmp_path / "missing")) is None
    assert spark_internals.checkpoint_query_id("s3a://bucket/checkpoint") is None


def test_the_checkpoints_offset_log_holds_a_line_per_source(probe, tmp_path):
    checkpoint = tmp_path / "checkpoint"
    query = (
        probe.readStream.format("rate")
        .load()
        .writeStream.format("noop")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    finish_available_now(query)
    batches = spark_internals.checkpoint_offset_batches(checkpoint)
    assert batches, "an offsets file per planned micro-batch"
    lines = spark_internals.checkpoint_source_offsets(max(batches, key=lambda p: int(p.name)))
    assert lines is not None and len(lines) == 1
    assert isinstance(json.loads(lines[0]), (dict, int))  # the rate source's own offset form


def test_foreach_batch_sees_its_query_id_on_the_driver(spark, tmp_path):
    seen: list = []
    query = (
        spark.readStream.format("rate")
        .load()
        .writeStream.foreachBatch(lambda df, batch_id: seen.append(spark_internals.session_query_id(df.sparkSession)))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    finish_available_now(query)
    assert seen and set(seen) == {query.id}
    assert spark_internals.session_query_id(spark) is None, "outside a stream: no query"


# ---- Pushdown: whether the planning call may get a reader with pushFilters ----------------------------------


@pytest.mark.parametrize("on", [True, False])
def test_pushdown_is_on_exactly_when_spark_will_push_filters(probe, tmp_path, on):
    out = tmp_path / "reports"
    previous = probe.conf.get(PUSHDOWN, "false")
    probe.conf.set(PUSHDOWN, str(on).lower())
    try:
        rows = probe.read.format("internals-probe").option("out", str(out)).load().where("id = 1").collect()
    finally:
        probe.conf.set(PUSHDOWN, previous)
    assert rows == [(1,)]
    answers = {r["pushdown_enabled"] for r in _reports(out)}
    # pyspark 4.0 has no pushdown: off whatever the setting.
    assert answers == {on and spark_internals.FILTER_PUSHDOWN}


def test_inside_a_worker_sparkfiles_root_holds_what_add_py_file_shipped(spark, tmp_path):
    """formats/user_modules.py reads SparkFiles' root and worker flag (two internals) to find archives shipped after
    the data source was registered: inside a task they name the folder holding them; on the driver, nothing."""
    archive = tmp_path / f"contract_{tmp_path.name}.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("contract_probe_module.py", "VALUE = 1\n")
    spark.sparkContext.addPyFile(str(archive))

    def roots(_: object) -> list[list[str]]:
        from pyspark_upsert_kafka.formats.user_modules import shipped_files_root

        root = shipped_files_root()
        return [sorted(p.name for p in root.iterdir()) if root is not None else []]

    (inside,) = spark.sparkContext.parallelize([0], 1).mapPartitions(roots).collect()
    assert archive.name in inside
    assert shipped_files_root() is None


# ---- A MapState's calls many at a time ----------------------------------------------------------------------


# A value of each kind: strings and numbers (the helpers' own, pickled as they are) and kinds PySpark converts to and
# from their pickled form (a timestamp, a date, a decimal): the first a value whose answers outgrow a socket buffer.
# Each field null in some values (a versioned normalize keeps a deleted key's entry without a row).
_MAP_VALUES = {
    "v STRING, n BIGINT, x DOUBLE, a ARRAY<BIGINT>": lambda i: (
        None if i % 11 == 1 else "x" * (20_000 if i % 100 == 0 else i % 7), None if i % 5 == 2 else i,
        float("nan") if i % 3 == 0 else None if i % 3 == 1 else i / 4, None if i % 13 == 3 else [i, -i],
    ),
    "t TIMESTAMP, d DATE, m DECIMAL(20, 3)": lambda i: (
        None if i % 4 == 2 else datetime(2026, 3, 29, 1, 30, tzinfo=timezone.utc) + timedelta(microseconds=i),
        None if i % 6 == 4 else date(1970, 1, 1) + timedelta(i),
        None if i % 7 == 5 else Decimal(i) / 1000 - Decimal("12345678901234567"),
    ),
}  # fmt: skip


class _ManyAtATime(StatefulProcessor):
    """Writes, reads and removes a group's keys through map_state_calls, for each kind of value, and checks each
    answer against the MapState's own one-key calls."""

    def init(self, handle) -> None:
        self._states = [handle.getMapState(f"m{i}", "k STRING", value) for i, value in enumerate(_MAP_VALUES)]

    def handleInputRows(self, key, rows, timerValues):
        keys = [(k,) for frame in rows for k in frame["k"].tolist()]
        problems = []
        for state, make in zip(self._states, _MAP_VALUES.values()):
            calls = spark_internals.map_state_calls(state)
            if not calls:
                problems.append("map_state_calls gave None")
                continue
            values = [make(i) for i in range(len(keys))]
            calls.update_values(keys, values)
            for (k,), v in zip(keys, values):  # the same values through PySpark's own call
                state.updateValue((f"own {k}",), v)
            asked = [*keys, ("absent",)]
            one_by_one = [None if v is None else tuple(v) for v in map(state.getValue, asked)]  # Rows, as tuples
            if repr(one_by_one[:-1]) != repr([tuple(state.getValue((f"own {k}",))) for (k,) in keys]):
                problems.append(f"update_values wrote other values than updateValue: {one_by_one[:2]}")
            many = calls.get_values(asked)
            differ = [(repr(a), repr(b)) for a, b in zip(many, one_by_one) if repr(a) != repr(b)]
            if differ or len(many) != len(asked) or one_by_one[-1] is not None:
                problems.append(f"get_values differs from getValue: {[(a[-150:], b[-150:]) for a, b in differ[:1]]}")
            calls.remove_keys(keys[::2])
            if [state.containsKey(k) for k in keys] != [i % 2 == 1 for i in range(len(keys))]:
                problems.append("remove_keys removed other keys")
        yield pd.DataFrame({"g": [key[0]], "problems": ["; ".join(problems)]})

    def close(self) -> None:
        pass


def test_map_state_calls_many_at_a_time_are_the_mapstates_own_calls(spark, rocksdb):
    """tables/normalize.py reads and writes a micro-batch's keys through map_state_calls: on every pyspark it must be
    available and give what the MapState's one-key calls give (values, absent keys, removals), for values it pickles
    as they are and values PySpark converts."""
    rows = spark.range(3000).selectExpr("CAST(id % 2 AS STRING) AS g", "CAST(id AS STRING) AS k")
    out = rows.groupBy("g").transformWithStateInPandas(_ManyAtATime(), "g STRING, problems STRING", "Append", "None")
    assert sorted(tuple(r) for r in out.collect()) == [("0", ""), ("1", "")]


class _BothPaths(StatefulProcessor):
    """tables/map_entries.py's two paths side by side on two MapStates: many entries at a time (map_state_calls), and
    the MapState's own one-key calls that it takes where map_state_calls answers None."""

    def init(self, handle) -> None:
        value = StructType([StructField("v", StringType()), StructField("n", LongType())])
        self._paths = {path: MapEntries(handle, path, "k", value) for path in ("many", "one_key")}
        self._paths["one_key"]._calls = None  # as where map_state_calls answers None

    def handleInputRows(self, key, rows, timerValues):
        keys = [k for frame in rows for k in frame["k"].tolist()]
        values = [("x" * (i % 7), i) for i in range(len(keys))]
        expected = [None if i % 2 == 0 else values[i] for i in range(len(keys))] + [None]
        problems = []
        for path, entries in self._paths.items():
            before = entries.held(keys)  # a fresh group: nothing read
            entries.write(keys, values)
            entries.write([], [], removed=keys[::2])
            after = [None if v is None else tuple(v) for v in entries.held([*keys, "absent"])]
            if before != [None] * len(keys) or after != expected:
                problems.append(f"{path}: {after[:4]}")
        yield pd.DataFrame({"g": [key[0]], "problems": ["; ".join(problems)]})

    def close(self) -> None:
        pass


def test_map_entries_one_key_calls_hold_what_the_calls_many_at_a_time_hold(spark, rocksdb):
    """Where map_state_calls answers None (a pyspark whose client differs), the helpers' state goes through the
    MapState's own calls: the same entries written, removed and read."""
    rows = spark.range(600).selectExpr("CAST(id % 2 AS STRING) AS g", "CAST(id AS STRING) AS k")
    out = rows.groupBy("g").transformWithStateInPandas(_BothPaths(), "g STRING, problems STRING", "Append", "None")
    assert sorted(tuple(r) for r in out.collect()) == [("0", ""), ("1", "")]


def test_map_state_calls_of_another_object_are_unknown():
    assert spark_internals.map_state_calls(object()) is None


def test_outside_spark_workers_the_probes_answer_unknown():
    assert spark_internals.task_input_complete() is None
    assert spark_internals.task_micro_batch() is None
    assert spark_internals.pushdown_enabled() is False
