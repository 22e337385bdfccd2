"""The reducing buffer (`sink.buffer-flush.max-rows` / `.interval`) against the real broker."""

from __future__ import annotations

import time
from collections import Counter

import orjson
import pytest
from pyspark.sql import functions as F

from tests.faults.helpers import wait_reached
from tests.faults.hooks import block_first_attempt
from tests.support.kafka_io import log_ends, produce
from tests.support.read_helpers import wait_for
from tests.support.write_helpers import records, write

SCHEMA = "id INT, name STRING, price DOUBLE"
CHANGES = SCHEMA + ", _change_type STRING"


def buffered(max_rows: int, interval: str = "1 min") -> dict[str, str]:
    return {"sink.buffer-flush.max-rows": str(max_rows), "sink.buffer-flush.interval": interval}


@pytest.mark.parametrize("given", [{"sink.buffer-flush.max-rows": "10"}, {"sink.buffer-flush.interval": "1 s"}])
def test_buffer_options_are_set_both_or_neither_with_flinks_message(spark, new_topic, options, given):
    message = (
        r"'sink.buffer-flush.max-rows' and 'sink.buffer-flush.interval' must be set to be greater than zero "
        r"together to enable sink buffer flushing"
    )
    with pytest.raises(Exception, match=message):
        write(spark, options(new_topic(), given), [(1, "a", 1.0)], SCHEMA)


def test_three_updates_and_a_delete_of_a_key_reach_kafka_as_its_tombstone_only(spark, new_topic, options, bootstrap):
    topic = new_topic()
    rows = [
        (1, "a", 1.0, "upsert"),
        (2, "b", 2.0, "upsert"),
        (1, "a2", 2.0, "upsert"),
        (1, "a3", 3.0, "update_postimage"),
        (2, "b2", 4.0, "upsert"),
        (1, None, None, "delete"),
    ]
    write(spark, options(topic, buffered(100)), rows, CHANGES)

    assert records(bootstrap, topic) == [({"id": 2}, {"id": 2, "name": "b2", "price": 4.0}), ({"id": 1}, None)]


def test_more_distinct_keys_than_max_rows_flush_the_buffer_several_times(spark, new_topic, options, bootstrap):
    rows = [(i, f"v{round_}", float(i), "upsert") for round_ in (1, 2) for i in range(30)]
    small, large = new_topic(), new_topic()
    write(spark, options(small, buffered(10)), rows, CHANGES)
    write(spark, options(large, buffered(1000)), rows, CHANGES)

    # max-rows 10: every 10 distinct keys are flushed, so each key's two versions are sent in different flushes.
    small_records = records(bootstrap, small)
    assert Counter(k["id"] for k, _ in small_records) == {i: 2 for i in range(30)}
    assert [v["name"] for _, v in small_records] == ["v1"] * 30 + ["v2"] * 30
    # A buffer holding every key sends each once, with its last version.
    assert [(k["id"], v["name"]) for k, v in records(bootstrap, large)] == [(i, "v2") for i in range(30)]


# (id, name, version, change): each key's rows out of version order, a tombstone of a higher version among them.
OUT_OF_ORDER = [(1, "a", 2, "upsert"), (1, "older", 1, "upsert"), (2, "x", 1, "upsert"), (2, None, 3, "delete"),
                (2, "older", 2, "upsert"), (3, "p", 5, "upsert"), (3, None, 4, "delete")]  # fmt: skip


def _write_versioned(spark, opts: dict, source: str) -> None:
    """OUT_OF_ORDER written in its order, each row's version in its `v` header or as its timestamp (near now)."""
    df = spark.createDataFrame(OUT_OF_ORDER, "id INT, name STRING, v BIGINT, _change_type STRING").coalesce(1)
    if source == "timestamp":
        df = df.withColumn("timestamp", F.timestamp_millis(F.lit(int(time.time() * 1000)) + F.col("v")))
    else:
        df = df.withColumn("headers", F.create_map(F.lit("v"), F.col("v").cast("string").cast("binary")))
    meta = {"metadata.columns": "timestamp" if source == "timestamp" else "headers"}
    df.drop("v").write.format("upsert-kafka").options(**(opts | meta)).mode("append").save()


@pytest.mark.parametrize("source", ["header:v", "timestamp"])
def test_with_sink_upsert_version_the_buffer_sends_each_keys_highest_version_tombstones_included(
    spark, new_topic, options, bootstrap, source
):
    """Without the option the buffer sends each key's last row, and an older row that came last hides the newer ones
    from readers that order by version; with it, each key's row of the highest version leaves."""
    by_last, by_version = new_topic(1), new_topic(1)
    _write_versioned(spark, options(by_last, buffered(100)), source)
    _write_versioned(spark, options(by_version, buffered(100) | {"sink.upsert.version": source}), source)

    row = lambda i, name: ({"id": i}, None if name is None else {"id": i, "name": name})  # noqa: E731
    assert records(bootstrap, by_last) == [row(1, "older"), row(2, "older"), row(3, None)]
    assert records(bootstrap, by_version) == [row(1, "a"), row(2, None), row(3, "p")]


def test_sink_upsert_version_fails_a_row_without_its_version_naming_the_key_and_needs_its_column(
    spark, new_topic, options
):
    opts = options(new_topic(), buffered(100) | {"sink.upsert.version": "header:v", "metadata.columns": "headers"})
    rows = spark.createDataFrame([(1, "a", "3"), (2, "b", None)], "id INT, name STRING, v STRING")
    with_headers = rows.withColumn("headers", F.create_map(F.lit("v"), F.col("v").cast("binary")))
    missing = with_headers.withColumn("headers", F.when(F.col("id") == 2, F.create_map()).otherwise(F.col("headers")))
    with pytest.raises(Exception, match=r"RecordError: the row with key \{'id': 2\} has no header 'v' in column"):
        missing.drop("v").coalesce(1).write.format("upsert-kafka").options(**opts).mode("append").save()
    with pytest.raises(Exception, match=r"OptionError: option 'sink.upsert.version' = timestamp takes each row's "):
        write(spark, options(new_topic(), {"sink.upsert.version": "timestamp"}), [(1, "a", 1.0)], SCHEMA)


def test_interval_flush_sends_buffered_rows_while_a_streaming_task_still_runs(
    spark, new_topic, options, bootstrap, tmp_path
):
    source, target = new_topic(), new_topic()
    n, keys = 40_000, 500
    produce(
        bootstrap,
        source,
        [
            (orjson.dumps({"id": i % keys}), orjson.dumps({"id": i % keys, "name": f"v{i}", "price": i}))
            for i in range(n)
        ],
    )
    changes = spark.readStream.format("upsert-kafka").options(**options(source)).schema(CHANGES).load()
    # Halfway through, the task is held (its input stops at row n / 2) with every key buffered until the target
    # holds records: only an interval flush can send them while the task runs.
    hold = block_first_attempt(0, {0: n // 2}, str(tmp_path))
    query = (
        changes.where(hold("price").isNotNull())
        .writeStream.format("upsert-kafka")
        .options(**options(target, buffered(10 * keys, "100 ms")))  # max-rows never reached
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(availableNow=True)
        .start()
    )
    try:
        wait_reached(query, [tmp_path / "reached-p0"], "the write task")
        wait_for(lambda: sum(log_ends(bootstrap, target).values()) > 0 or not query.isActive, "an interval flush")
        assert query.isActive, f"the task ended before any flush: {query.exception()}"
    finally:
        (tmp_path / "released").touch()
    query.awaitTermination(120)
    assert query.exception() is None, query.exception()

    written = records(bootstrap, target)
    # Only the end-of-task flush would send each key once; the interval flushed keys while the task ran, and
    # they were sent again, later, with their last value.
    assert len(written) > keys, "no flush before the end of the task"
    assert len(written) < n, "the buffer did not reduce"
    last = {k["id"]: v["name"] for k, v in written}
    assert last == {k: f"v{n - keys + k}" for k in range(keys)}
