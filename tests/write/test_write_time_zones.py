"""Where a write task's rows enter (write/task_input.py), whatever the session's time zone or the worker's: Spark's
Arrow batches, their timestamps tagged with the session's zone, are re-tagged UTC without a value changing; pyspark
4.0's rows (a stream writer's), their timestamps the worker's local time, become the same instants. Pure logic: the
round trips through Spark and Kafka are in tests/formats/test_format_time_zones.py."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Iterator

import pyarrow as pa
import pytest
from pyspark.sql.types import Row
from pyspark_upsert_kafka.spark_internals import to_arrow_schema
from pyspark_upsert_kafka.write.task_input import in_utc, rows_as_batches

from tests.support.read_helpers import schema_of

pytestmark = pytest.mark.compat  # pure logic, and pyspark 4.0's rows are what it checks: on every pyspark

SCHEMA = (
    "ts TIMESTAMP, ntz TIMESTAMP_NTZ, d DATE, st STRUCT<ts: TIMESTAMP NOT NULL, n: INT NOT NULL>, "
    "tss ARRAY<TIMESTAMP>, by_time MAP<TIMESTAMP, ARRAY<TIMESTAMP>>"
)
UTC = dt.timezone.utc
INSTANTS = [
    dt.datetime(1850, 6, 1, 12, 34, 56, 789012, tzinfo=UTC),  # New York's local mean time: -4:56:02
    dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    dt.datetime(2024, 3, 10, 7, 30, tzinfo=UTC),  # 03:30 in New York, its clocks just set forward
    dt.datetime(2024, 11, 3, 5, 30, tzinfo=UTC),  # the first 01:30 of New York's overlap
]
NTZ = dt.datetime(2024, 3, 10, 2, 30)  # no wall-clock time in New York


def in_zone(t: pa.DataType, zone: str) -> pa.DataType:
    """`t` as Spark hands it under session zone `zone`."""
    if pa.types.is_timestamp(t):
        return pa.timestamp(t.unit, tz=zone) if t.tz is not None else t
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(in_zone(f.type, zone)) for f in t])
    if pa.types.is_map(t):
        return pa.map_(
            t.key_field.with_type(in_zone(t.key_type, zone)), t.item_field.with_type(in_zone(t.item_type, zone))
        )
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(in_zone(t.value_type, zone)))
    return t


def rows() -> list[tuple]:
    return [(ts, NTZ, dt.date(1850, 6, 1), (ts, i), [ts, None], [(ts, [ts])]) for i, ts in enumerate(INSTANTS)] + [
        (None,) * 6
    ]


@pytest.mark.parametrize("zone", ["Etc/UTC", "America/New_York", "Asia/Kolkata", "Pacific/Chatham"])
def test_batches_in_the_sessions_zone_are_retagged_utc_with_every_value_and_buffer_kept(zone):
    utc = to_arrow_schema(schema_of(SCHEMA))
    given = pa.schema([f.with_type(in_zone(f.type, zone)) for f in utc])
    batch = pa.RecordBatch.from_pylist([dict(zip(utc.names, r)) for r in rows()], schema=given)

    (out,) = in_utc(iter([batch]))

    assert out.schema == utc
    assert out.to_pylist() == pa.RecordBatch.from_pylist(batch.to_pylist(), schema=utc).to_pylist()
    # Only the type changed: the timestamps' buffers are the batch's own.
    assert out.column("ts").buffers()[1].address == batch.column("ts").buffers()[1].address


def test_a_null_struct_whose_not_null_fields_are_null_beneath_it_as_spark_sends_them_is_retagged_too():
    ny = pa.timestamp("us", tz="America/New_York")
    fields = [pa.field("ts", ny, nullable=False), pa.field("n", pa.int32(), nullable=False)]
    children = [pa.array([0, None], ny), pa.array([1, None], pa.int32())]
    st = pa.StructArray.from_arrays(children, fields=fields, mask=pa.array([False, True]))

    (out,) = in_utc(iter([pa.RecordBatch.from_arrays([st], names=["st"])]))

    assert out.schema == to_arrow_schema(schema_of("st STRUCT<ts: TIMESTAMP NOT NULL, n: INT NOT NULL>"))
    assert out.to_pylist() == [{"st": {"ts": dt.datetime(1970, 1, 1, tzinfo=UTC), "n": 1}}, {"st": None}]


def test_batches_already_in_utc_pass_as_they_are():
    batch = pa.RecordBatch.from_pylist([], schema=to_arrow_schema(schema_of(SCHEMA)))
    assert next(in_utc(iter([batch]))) is batch


@pytest.fixture
def process_tz(monkeypatch) -> Iterator[Callable[[str], None]]:
    """Set this Python process's TZ (its local time) for the test."""

    def set_tz(zone: str) -> None:
        monkeypatch.setenv("TZ", zone)
        time.tzset()

    yield set_tz
    monkeypatch.undo()
    time.tzset()


@pytest.mark.parametrize("zone", ["America/New_York", "Asia/Kolkata", "Pacific/Chatham"])
def test_rows_of_pyspark_40_in_the_workers_local_time_become_the_same_instants(process_tz, zone):
    process_tz(zone)
    local = lambda ts: ts.astimezone().replace(tzinfo=None)  # noqa: E731  (pyspark 4.0's ArrowTableToRowsConversion)
    given = [
        Row(
            ts=local(ts),
            ntz=NTZ,
            d=d,
            st=Row(ts=local(ts), n=n),
            tss=[local(ts), None],
            by_time={local(ts): [local(ts)]},
        )
        for ts, _, d, (_, n), _, _ in rows()[:-1]
    ] + [Row(*(None,) * 6)]

    (batch,) = rows_as_batches(iter(given), schema_of(SCHEMA))

    assert batch.schema == to_arrow_schema(schema_of(SCHEMA))
    expected = pa.RecordBatch.from_pylist([dict(zip(batch.schema.names, r)) for r in rows()], schema=batch.schema)
    assert batch.to_pylist() == expected.to_pylist()
