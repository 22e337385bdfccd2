"""The scenarios whose path differs between pyspark versions: rate limits without admission control (4.0/4.1
call latestOffset() with no start and no limit), Trigger.AvailableNow, TIME columns. Run on every supported
pyspark; the README's support table says what each version does."""

from __future__ import annotations

import datetime as dt

import pytest
from pyspark_upsert_kafka import OptionError, flink_table
from pyspark_upsert_kafka.spark_internals import ADMISSION_CONTROL, TimeType

from tests.support.read_helpers import (
    Collector,
    as_checkpointed,
    rec,
    run_available_now,
    send,
    start_collecting,
    stream,
    stream_reader,
    wait_for,
)

ROWS = "id INT, name STRING, part INT, _change_type STRING"


def _total(offset: dict, topic: str) -> int:
    return sum(offset[topic].values())


def test_latest_offset_without_arguments_limits_each_batch_from_the_last_planned_end(
    spark, new_topic, options, bootstrap
):
    """pyspark 4.0/4.1's call: latestOffset() before initialOffset() on a new query; after a restart Spark first
    shows the reader the checkpoint's latest offset as partitions(x, x) (AcceptsLatestSeenOffset)."""
    topic = new_topic(partitions=2)
    send(bootstrap, topic, [rec(i, partition=i % 2) for i in range(20)])
    opts = options(topic, {"maxOffsetsPerTrigger": "6"})
    reader = stream_reader(opts)
    first = as_checkpointed(reader.latestOffset())
    assert _total(first, topic) == 6
    reader.partitions(as_checkpointed(reader.initialOffset()), first)
    second = as_checkpointed(reader.latestOffset())
    assert _total(second, topic) == 12

    restarted = stream_reader(opts)
    assert restarted.partitions(second, second) == []
    third = as_checkpointed(restarted.latestOffset())
    assert _total(third, topic) == 18
    restarted.partitions(second, third)
    assert _total(as_checkpointed(restarted.latestOffset()), topic) == 20


def test_min_offsets_per_trigger_holds_a_batch_back_without_arguments(spark, new_topic, options, bootstrap):
    topic = new_topic()
    send(bootstrap, topic, [rec(i) for i in range(3)])
    reader = stream_reader(options(topic, {"minOffsetsPerTrigger": "5", "maxTriggerDelay": "1h"}))
    first = as_checkpointed(reader.latestOffset())  # the first trigger always goes
    assert _total(first, topic) == 3
    reader.partitions(as_checkpointed(reader.initialOffset()), first)
    send(bootstrap, topic, [rec(i) for i in range(3, 6)])
    assert as_checkpointed(reader.latestOffset()) == first, "3 new records < 5: no batch"
    send(bootstrap, topic, [rec(i) for i in range(6, 8)])
    assert _total(as_checkpointed(reader.latestOffset()), topic) == 8


def test_a_rate_limited_stream_keeps_its_limit_across_a_restart(spark, new_topic, options, bootstrap, tmp_path):
    topic = new_topic(partitions=2)
    send(bootstrap, topic, [rec(i, partition=i % 2) for i in range(30)])
    opts = options(topic, {"metadata.columns": "part=partition", "maxOffsetsPerTrigger": "4"})
    checkpoint = str(tmp_path / "cp")
    runs = []
    for wanted in (8, 30):
        sink = Collector()
        query = start_collecting(stream(spark, opts, ROWS), checkpoint, sink)
        try:
            seen = {r[0] for run in runs for r in run.rows}
            wait_for(lambda: len(seen | {r[0] for r in sink.rows}) >= wanted, f"{wanted} keys")  # noqa: B023
        finally:
            query.stop()
        runs.append(sink)
    sizes = [len(run.by_batch[b]) for run in runs for b in run.batches]
    assert max(sizes) <= 4, sizes
    # A batch the first run had not committed is replayed by the second with the same rows.
    every = {b: rows for run in runs for b, rows in run.by_batch.items()}
    assert sorted(r[0] for rows in every.values() for r in rows) == list(range(30)), "none missing, none twice"


def test_available_now_reads_every_record_there_at_its_start_and_then_only_new_ones(
    spark, new_topic, options, bootstrap, tmp_path
):
    topic = new_topic(partitions=2)
    send(bootstrap, topic, [rec(i, partition=i % 2) for i in range(12)])
    opts, checkpoint = options(topic, {"metadata.columns": "part=partition"}), str(tmp_path / "cp")
    first = run_available_now(stream(spark, opts, ROWS), checkpoint)
    assert sorted(r[0] for r in first.rows) == list(range(12))
    send(bootstrap, topic, [rec(i, partition=i % 2) for i in range(12, 17)])
    second = run_available_now(stream(spark, opts, ROWS), checkpoint)
    assert sorted(r[0] for r in second.rows) == list(range(12, 17))


def test_available_now_with_a_rate_limit(spark, new_topic, options, bootstrap, tmp_path):
    """pyspark 4.2+: every record in batches within the limit. 4.0/4.1 run a Python source under AvailableNow as
    one micro-batch (Spark's fallback for sources without SupportsTriggerAvailableNow): that batch stops at the
    limit and the next run goes on from there, nothing read twice (README, Spark versions)."""
    topic = new_topic(partitions=2)
    send(bootstrap, topic, [rec(i, partition=i % 2) for i in range(10)])
    opts, checkpoint = (
        options(topic, {"metadata.columns": "part=partition", "maxOffsetsPerTrigger": "4"}),
        str(tmp_path / "cp"),
    )
    runs = [run_available_now(stream(spark, opts, ROWS), checkpoint)]
    if ADMISSION_CONTROL:
        assert len(runs[0].batches) == 3
    else:
        assert len(runs[0].batches) == 1
        runs += [run_available_now(stream(spark, opts, ROWS), checkpoint) for _ in range(2)]
    sizes = [len(run.by_batch[b]) for run in runs for b in run.batches]
    assert sizes == [4, 4, 2]
    assert sorted(r[0] for run in runs for r in run.rows) == list(range(10))


# Flink's TIME column, as flink_table reads it.
TIME_DDL = (
    "CREATE TABLE t (id INT, t TIME(3), PRIMARY KEY (id) NOT ENFORCED) WITH ('connector' = 'upsert-kafka', "
    "'topic' = 't', 'properties.bootstrap.servers' = '127.0.0.1:9092', 'key.format' = 'json', 'value.format' = 'json')"
)


def test_a_time_column_is_read_and_written_from_4_1_and_refused_by_name_on_4_0(spark, new_topic, options):
    """pyspark 4.1+ has Spark's TIME (Arrow time64[ns] both ways): a TIME(3) column is written and read back as written
    by json (whole seconds, as Flink's json: a fraction is refused), csv and avro (Flink's time-millis). pyspark 4.0 has
    no TIME type: a SchemaError says so, and flink_table refuses Flink's TIME naming the pyspark that has one."""
    if TimeType is None:
        read = spark.read.format("upsert-kafka").options(**options(new_topic(), {"schema": "id INT, t TIME(3)"}))
        with pytest.raises(Exception, match=r"SchemaError: .*TIME needs pyspark 4\.1"):
            read.load().collect()
        with pytest.raises(OptionError, match=r"'t' is TIME\(3\), and this pyspark has no TIME type \(pyspark 4\.1"):
            flink_table(TIME_DDL)
        return
    assert str(flink_table(TIME_DDL).columns["t"].dataType) == "TimeType(3)"
    whole = [(1, dt.time(0, 0, 0)), (2, dt.time(23, 59, 59)), (3, None)]
    fraction = [(4, dt.time(12, 34, 56, 789000)), (5, dt.time(0, 0, 0, 1000))]
    for fmt in ("json", "csv", "avro"):
        opts = options(new_topic(), {"value.format": fmt})
        rows = whole if fmt == "json" else whole + fraction
        spark.createDataFrame(rows, "id INT, t TIME(3)").write.format("upsert-kafka").options(**opts).mode(
            "append"
        ).save()
        read = spark.read.format("upsert-kafka").options(**opts, schema="id INT, t TIME(3)").load()
        assert sorted((r.id, r.t) for r in read.collect()) == rows, fmt
        if fmt == "json":
            with pytest.raises(Exception, match=r"TIME (00:00:00\.001|12:34:56\.789) has a fraction"):
                spark.createDataFrame(fraction, "id INT, t TIME(3)").write.format("upsert-kafka").options(**opts).mode(
                    "append"
                ).save()
