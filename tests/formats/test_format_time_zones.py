"""Every format's time values under Spark session time zones other than UTC, and Python workers whose process `TZ`
differs from the session's: a TIMESTAMP written in one zone and read in another is the same instant, a
TIMESTAMP_NTZ, a DATE and a TIME the same wall-clock value, and a record's bytes (its key, so its partition,
included) do not depend on the zone that wrote it.

The values: before 1970 and before 1900 (local mean times, offsets with seconds), at DST gaps and overlaps (New
York; Chatham's +13:45 / +12:45), Kolkata's wartime +06:30, with milli- and microsecond fractions, at the top level
and nested in structs, arrays and maps. raw holds no time type (as Flink's raw)."""

from __future__ import annotations

import datetime as dt
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.errors import AnalysisException
from pyspark_upsert_kafka import UpsertKafkaDataSource
from pyspark_upsert_kafka.formats import Codec, Decoded, Decoder, Encoder
from pyspark_upsert_kafka.formats.protobuf.derived import derived_message
from pyspark_upsert_kafka.spark_internals import FILTER_PUSHDOWN, TimeType, to_arrow_schema

from tests.support.kafka_io import consume_all
from tests.support.read_helpers import finish_available_now, schema_of, stream
from tests.support.write_helpers import write

ZONES = ("Etc/UTC", "America/New_York", "Asia/Kolkata", "Pacific/Chatham")
UTC = dt.timezone.utc


def utc(*parts: int) -> dt.datetime:
    return dt.datetime(*parts, tzinfo=UTC)


# (TIMESTAMP, TIMESTAMP_NTZ, DATE), where zones differ most.
TIMES = [
    (utc(1850, 6, 1, 12, 34, 56, 789012), dt.datetime(1850, 6, 1, 12, 34, 56, 789012), dt.date(1850, 6, 1)),
    (utc(1969, 12, 31, 23, 59, 59, 999999), dt.datetime(1969, 12, 31, 23, 59, 59, 999999), dt.date(1969, 12, 31)),
    # New York's spring gap (02:00 -> 03:00): 02:30 is no wall-clock time there.
    (utc(2024, 3, 10, 7, 30), dt.datetime(2024, 3, 10, 2, 30), dt.date(2024, 3, 10)),
    # Chatham's autumn change (03:45 +13:45 -> 02:45 +12:45).
    (utc(2024, 4, 6, 14, 0, 0, 1), dt.datetime(2024, 4, 7, 3, 45, 0, 1), dt.date(9999, 12, 31)),
    (utc(1942, 9, 1, 0, 0, 0, 1000), dt.datetime(1942, 9, 1, 5, 30), dt.date(1942, 9, 1)),  # Kolkata at +06:30
    # New York's autumn overlap: both instants are 01:30 there.
    (utc(2024, 11, 3, 5, 30, 0, 123000), dt.datetime(2024, 11, 3, 1, 30, 0, 123000), dt.date(2024, 11, 3)),
    (utc(2024, 11, 3, 6, 30, 0, 123000), dt.datetime(2024, 11, 3, 1, 30, 0, 123000), dt.date(1, 1, 1)),
]
CLOCKS = [dt.time(0, 0), dt.time(12, 34, 56), dt.time(23, 59, 59)]


def table(with_date: bool = True, with_time: bool = True, times: list[tuple] = TIMES) -> tuple[str, list[tuple]]:
    """The columns (DDL) and rows: `id` and `ts` the key, each row nesting the values of the row before it."""
    with_time = with_time and TimeType is not None  # pyspark 4.1+
    columns = ["id INT", "ts TIMESTAMP", "ntz TIMESTAMP_NTZ", *["d DATE"] * with_date, *["t TIME(6)"] * with_time]
    nested = ["ts: TIMESTAMP", "ntz: TIMESTAMP_NTZ", *["d: DATE"] * with_date]
    columns += [f"st STRUCT<{', '.join(nested)}>", "tss ARRAY<TIMESTAMP>", "by_name MAP<STRING, TIMESTAMP>"]
    rows = []
    for i, (ts, ntz, d) in enumerate(times):
        before_ts, before_ntz, before_d = times[i - 1]
        flat = [i, ts, ntz, *[d] * with_date, *[CLOCKS[i % len(CLOCKS)]] * with_time]
        inner = (before_ts, before_ntz, *[before_d] * with_date)
        rows.append((*flat, inner, [ts, before_ts], {"now": ts, "before": before_ts}))
    nulls = [None] * (1 + with_date + with_time)  # a key column is never null
    rows.append((len(times), utc(2000, 1, 1), *nulls, None, [], {}))
    return ", ".join(columns), rows


def in_utc(rows: pa.Table) -> list[dict]:
    """Spark's rows (toArrow), every TIMESTAMP an aware datetime in UTC whatever zone Spark tagged it with."""
    return rows.cast(pa.schema([f.with_type(_utc(f.type)) for f in rows.schema])).to_pylist()


def as_utc(rows: pa.Table) -> list[dict]:
    """in_utc's rows sorted by id, each map's entries by key (protobuf keeps no order of a map's entries)."""
    return sorted(({**r, "by_name": sorted(r["by_name"] or [])} for r in in_utc(rows)), key=lambda r: r["id"])


def _utc(t: pa.DataType) -> pa.DataType:
    if pa.types.is_timestamp(t) and t.tz is not None:
        return pa.timestamp(t.unit, tz="UTC")
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_utc(f.type)) for f in t])
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_utc(t.value_type)))
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(_utc(t.key_type)), t.item_field.with_type(_utc(t.item_type)))
    return t


def expected(schema: str, rows: list[tuple]) -> list[dict]:
    arrow = to_arrow_schema(schema_of(schema))
    return as_utc(pa.table([pa.array(c, f.type) for c, f in zip(zip(*rows), arrow)], schema=arrow))


def read(spark, source: str, opts: dict, schema: str, where: str | None = None):
    df = spark.read.format(source).options(**opts).schema(schema).load()
    return df if where is None else df.where(where)


# -- Python workers in another process TZ ----------------------------------------------------------------------

PROCESS_TZ = "America/New_York"


class InNewYork(UpsertKafkaDataSource):
    """The connector under another name, registered while the SparkContext's environment had TZ=PROCESS_TZ: the
    Python processes Spark starts for it (planning, tasks) run with that TZ."""

    @classmethod
    def name(cls) -> str:
        return "upsert-kafka-tz-new-york"


@pytest.fixture(scope="module")
def new_york(spark) -> str:
    """The name of the connector whose Python workers run with process TZ America/New_York. Spark keys its Python
    workers by their environment, which a data source takes from the SparkContext's when it is registered."""
    environment = spark.sparkContext.environment
    environment["TZ"] = PROCESS_TZ
    try:
        spark.dataSource.register(InNewYork)
    except AnalysisException as e:  # registered by an earlier module of the session (pyspark 4.0 refuses twice)
        if "DATA_SOURCE_ALREADY_EXISTS" not in str(e):
            raise
    finally:
        del environment["TZ"]
    return InNewYork.name()


@pytest.mark.compat
def test_a_source_registered_under_a_process_tz_runs_its_python_workers_in_it(spark, new_topic, options, new_york):
    """The premise of the process-TZ cases below: the workers' local time is New York's."""
    opts = options(new_topic(), {"value.format": f"{__name__}:LocalZoneProbe", "value.fields-include": "EXCEPT_KEY"})
    spark.createDataFrame([(1, "")], "id INT, zone STRING").write.format(new_york).options(**opts).mode("append").save()
    assert read(spark, new_york, opts, "id INT, zone STRING").collect()[0].zone == "EST/EDT"
    assert read(spark, "upsert-kafka", opts, "id INT, zone STRING").collect()[0].zone == "UTC/UTC"


class LocalZoneProbe(Codec):
    """A value format whose every value reads as the reading worker's local time zone names (`time.tzname`)."""

    name = "local-zone-probe"

    def decoder(self, schema: pa.Schema) -> Decoder:
        return _ZoneNames(schema)

    def encoder(self, schema: pa.Schema) -> Encoder:
        return _Empty()


class _ZoneNames(Decoder):
    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema

    def decode(self, payloads) -> Decoded:
        names = pa.array(["/".join(time.tzname)] * len(payloads))
        return Decoded(pa.RecordBatch.from_arrays([names], schema=self.schema))


class _Empty(Encoder):
    def encode(self, batch: pa.RecordBatch) -> list[bytes]:
        return [b""] * batch.num_rows


# -- every format ------------------------------------------------------------------------------------------------


def protobuf(url: str, tmp: Path) -> dict:
    """protobuf (no DATE or TIME): protobuf-confluent's message type for the columns, as a descriptor file."""
    from google.protobuf import descriptor_pb2, timestamp_pb2

    schema, _ = table(with_date=False, with_time=False)
    message = derived_message(to_arrow_schema(schema_of(schema)), "value.protobuf.message-class-name")
    files = descriptor_pb2.FileDescriptorSet()
    for descriptor in (timestamp_pb2.DESCRIPTOR, message.file):
        descriptor.CopyToProto(files.file.add())
    (tmp / "row.desc").write_bytes(files.SerializeToString())
    return {"value.protobuf.message-class-name": "Row", "value.protobuf.descriptor-file": str(tmp / "row.desc")}


def registry(fmt: str) -> Callable[[str, Path], dict]:
    return lambda url, tmp: {f"value.{fmt}.url": url}


# format: (its options from the registry's URL and a folder, whether it holds DATE and TIME)
FORMATS: dict[str, tuple[Callable[[str, Path], dict], bool]] = {
    "json": (lambda url, tmp: {}, True),
    "csv": (lambda url, tmp: {"value.csv.null-literal": "\\N"}, True),
    "avro": (lambda url, tmp: {}, True),
    "avro-confluent": (registry("avro-confluent"), True),
    "json-confluent": (registry("json-confluent"), True),
    "protobuf": (protobuf, False),
    "protobuf-confluent": (registry("protobuf-confluent"), False),
    "debezium-json": (lambda url, tmp: {}, True),
    "canal-json": (lambda url, tmp: {}, True),
    "maxwell-json": (lambda url, tmp: {}, True),
    "ogg-json": (lambda url, tmp: {}, True),
    "debezium-avro-confluent": (registry("debezium-avro-confluent"), True),
}


@pytest.mark.compat  # every format on every pyspark: pyspark 4.0 hands writers and readers other Arrow paths
@pytest.mark.parametrize("fmt", FORMATS)
def test_time_values_written_under_every_session_zone_are_the_same_records_and_read_back_the_same_in_each(
    spark, new_topic, options, bootstrap, registry_url, tmp_path, session_time_zone, new_york, fmt
):
    more, with_date_and_time = FORMATS[fmt]
    schema, rows = table(with_date=with_date_and_time, with_time=with_date_and_time)
    topic = new_topic()
    opts = options(topic, {"value.format": fmt, "key.format": "csv", "key.fields": "id;ts"})
    opts |= more(registry_url, tmp_path)
    # Half the writes and reads go through Python workers whose process TZ (New York) is not the session's.
    source = lambda i: new_york if i % 2 else "upsert-kafka"  # noqa: E731

    for i, zone in enumerate(ZONES):
        session_time_zone(zone)
        spark.createDataFrame(rows, schema).coalesce(1).write.format(source(i)).options(**opts).mode("append").save()

    records = [(k, v) for _, _, k, v in consume_all(bootstrap, topic)]
    n = len(records) // len(ZONES)
    assert n >= len(rows) and records == records[:n] * len(ZONES)  # the same bytes from every zone
    for i, zone in enumerate(ZONES):
        session_time_zone(zone)
        assert as_utc(read(spark, source(i + 1), opts, schema).toArrow()) == expected(schema, rows), zone


# -- keys: the same bytes, so the same partition, and a key filter finds them ---------------------------------------


@pytest.mark.parametrize("key_format", ["csv", "json", "avro"])
def test_a_time_key_is_written_to_one_partition_from_every_zone_and_a_key_filter_in_any_zone_finds_it(
    spark, new_topic, options, bootstrap, session_time_zone, key_format
):
    schema = "id INT, ts TIMESTAMP, ntz TIMESTAMP_NTZ, d DATE"
    rows = [(i, ts, ntz, d) for i, (ts, ntz, d) in enumerate(TIMES)]
    topic = new_topic(partitions=4)
    opts = options(topic, {"key.format": key_format, "key.fields": "id;ts;ntz;d", "value.format": "json"})
    for zone in ZONES:
        session_time_zone(zone)
        write(spark, opts, rows, schema)

    records = Counter((p, k, v) for p, _, k, v in consume_all(bootstrap, topic))
    assert len(records) == len(rows) and set(records.values()) == {len(ZONES)}
    if key_format == "csv":  # Flink's text: a TIMESTAMP_LTZ in UTC
        assert (0, b'3,"2024-04-06 14:00:00.000001Z","2024-04-07 03:45:00.000001",9999-12-31') in {
            (p, k) for p, k, _ in records
        }
    ts, ntz, d = TIMES[3]
    micros = (ts - utc(1970, 1, 1)) // dt.timedelta(microseconds=1)  # a literal no session zone reads otherwise
    look_up = f"id = 3 AND ts = timestamp_micros({micros}) AND ntz = TIMESTAMP_NTZ'{ntz}' AND d = DATE'{d}'"
    pushdown = "spark.sql.python.filterPushdown.enabled"
    spark.conf.set(pushdown, "true")
    try:
        for zone in ZONES:
            session_time_zone(zone)
            found = read(spark, "upsert-kafka", opts, schema, look_up)
            assert in_utc(found.toArrow()) == [dict(zip(("id", "ts", "ntz", "d"), rows[3]))], zone
            if FILTER_PUSHDOWN:  # pyspark 4.1+: only the key's partition is read
                assert found.rdd.getNumPartitions() == 1, zone
    finally:
        spark.conf.unset(pushdown)


# -- a streaming write (pyspark 4.0 hands its stream writers rows in the worker's local time) ----------------------


@pytest.mark.compat
def test_a_stream_written_by_workers_in_another_process_tz_gives_the_records_of_a_batch_write(
    spark, new_topic, options, bootstrap, tmp_path, session_time_zone, new_york
):
    # Not the second 01:30 of New York's overlap: pyspark 4.0's rows give a stream writer local times without
    # DST's fold, so in a worker whose TZ has that overlap its two instants are one (connector/write/README.md).
    schema, rows = table(with_time=False, times=TIMES[:-1])  # no TIME: Spark's streaming refuses the type
    source, streamed, batch = new_topic(), new_topic(), new_topic()
    json_opts = options(source, {"key.fields": "id;ts"})
    write(spark, json_opts, rows, schema)
    csv = {"key.format": "csv", "key.fields": "id;ts", "value.format": "csv", "value.csv.null-literal": "\\N"}

    session_time_zone("Asia/Kolkata")
    changes = stream(spark, {**json_opts, "read.mode": "changelog"}, f"{schema}, _change_type STRING")
    writer = changes.writeStream.format(new_york).options(**options(streamed, csv))
    finish_available_now(writer.option("checkpointLocation", str(tmp_path)).trigger(availableNow=True).start())
    session_time_zone("Etc/UTC")
    write(spark, options(batch, csv), rows, schema)

    assert [r[2:] for r in consume_all(bootstrap, streamed)] == [r[2:] for r in consume_all(bootstrap, batch)]
    assert as_utc(read(spark, "upsert-kafka", options(streamed, csv), schema).toArrow()) == expected(schema, rows)
