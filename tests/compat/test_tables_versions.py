"""The tables/ helpers on every supported pyspark (transformWithStateInPandas exists from 4.0): an upsert topic
normalized and aggregated across restarts that switch RocksDB's changelog checkpointing, and two topics joined as of
event time, across a restart from the checkpoint."""

from __future__ import annotations

import datetime as dt

import orjson
from pyspark_upsert_kafka.tables.aggregate import aggregate_changelog
from pyspark_upsert_kafka.tables.normalize import normalized_changelog
from pyspark_upsert_kafka.tables.rows import CHANGELOG_CHECKPOINTING
from pyspark_upsert_kafka.tables.temporal_join import temporal_join

from tests.support.kafka_io import produce
from tests.support.read_helpers import Collector, as_utc, run_available_now, start_collecting, wait_for


def _order(i: int, category: str | None, price: float = 1.0) -> tuple:
    value = None if category is None else orjson.dumps({"id": i, "category": category, "price": price})
    return (orjson.dumps({"id": i}), value)


def test_an_upsert_topic_normalized_and_aggregated_goes_on_after_restarts_that_switch_changelog_checkpointing(
    spark, rocksdb, new_topic, options, bootstrap, tmp_path
):
    """The first run snapshots the state store at each commit (Spark's default: a checkpoint written before the helpers
    chose otherwise), the second writes changelogs (the helpers' choice where the session has none), the third
    snapshots again (a user who turns it off): each goes on from the state the one before left."""
    topic = new_topic(2)
    produce(bootstrap, topic, [_order(1, "a", 2.0), _order(2, "a", 3.0), _order(3, "b"), _order(1, "a", 2.0)])

    def sales(changelog: str | None):
        if changelog is None:
            spark.conf.unset(CHANGELOG_CHECKPOINTING)
        else:
            spark.conf.set(CHANGELOG_CHECKPOINTING, changelog)
        changes = (
            spark.readStream.format("upsert-kafka")
            .options(**options(topic, {"metadata.columns": "offset", "scan.startup.mode": "earliest-offset"}))
            .option("schema", "id INT, category STRING, price DOUBLE")
            .load()
        )
        return aggregate_changelog(
            normalized_changelog(changes, "id").drop("offset"),
            "category",
            n="COUNT(*)",
            total="SUM(price)",
            top="MAX(price)",
        )

    def changelogs() -> int:
        return len(list((tmp_path / "state").rglob("*.changelog")))

    first = run_available_now(sales("false"), str(tmp_path)).rows
    assert sorted(first) == [("a", 2, 5.0, 3.0, "insert"), ("b", 1, 1.0, 1.0, "insert")]
    assert changelogs() == 0
    # order 2 leaves a (its maximum) for b; order 3 is deleted, then b gets order 2
    produce(bootstrap, topic, [_order(3, None), _order(2, "b", 3.0), _order(9, None)])
    second = run_available_now(sales(None), str(tmp_path)).rows
    assert spark.conf.get(CHANGELOG_CHECKPOINTING) == "true"
    assert sorted(second) == [
        ("a", 1, 2.0, 2.0, "update_postimage"),
        ("a", 2, 5.0, 3.0, "update_preimage"),
        ("b", 1, 1.0, 1.0, "update_preimage"),
        ("b", 1, 3.0, 3.0, "update_postimage"),
    ]
    written = changelogs()
    assert written > 0
    # order 1 leaves a, its last, for b
    produce(bootstrap, topic, [_order(1, "b", 5.0)])
    third = run_available_now(sales("false"), str(tmp_path)).rows
    assert sorted(third) == [
        ("a", 1, 2.0, 2.0, "delete"),
        ("b", 1, 3.0, 3.0, "update_preimage"),
        ("b", 2, 8.0, 5.0, "update_postimage"),
    ]
    assert changelogs() == written


H, T0 = 3_600_000, 1704067200000  # an hour; 2024-01-01T00:00Z


def _keyed(key: dict, value: dict | None, at_ms: int) -> tuple:
    return (orjson.dumps(key), None if value is None else orjson.dumps(value), None, at_ms)


def test_a_temporal_join_of_two_topics_goes_on_after_a_restart(spark, rocksdb, new_topic, options, bootstrap, tmp_path):
    """Both sides in one stateful operator (a union keyed by the join key: pyspark 4.0 takes one input), orders waiting
    for the watermark of both sides, event-time timers; then the latest-value join."""
    keep = {"retention.ms": "-1"}
    orders, rates = new_topic(1, **keep), new_topic(1, **keep)

    def order(i: str, currency: str, hour: int) -> tuple:
        at = dt.datetime.fromtimestamp((T0 + hour * H) / 1000, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
        return _keyed({"id": i}, {"id": i, "currency": currency, "at": at}, T0 + hour * H)

    produce(bootstrap, rates, [_keyed({"currency": "A"}, {"currency": "A", "rate": 1.5}, T0 + H),
                               _keyed({"currency": "B"}, {"currency": "B", "rate": 2.0}, T0 + 3 * H)])  # fmt: skip
    produce(bootstrap, orders, [order("a", "A", 2), order("b", "B", 3)])
    start = {"scan.startup.mode": "earliest-offset"}

    def joined(stream_time: str | None = "at"):
        left = spark.readStream.format("upsert-kafka").options(**options(orders, start))
        left = left.option("schema", "id STRING, currency STRING, at TIMESTAMP_NTZ").load()
        left = left.select("id", "currency", as_utc(left.at).alias("at"))
        right = spark.readStream.format("upsert-kafka").options(**options(rates, start | {"key.fields": "currency"}))
        right = right.option("schema", "currency STRING, rate DOUBLE")
        right = right.option("metadata.columns", "t=timestamp,offset").load()
        return temporal_join(
            left.withWatermark("at", "0 seconds"), right.withWatermark("t", "0 seconds"), "currency",
            stream_time=stream_time, table_time="t",
        ).select("id", "rate")  # fmt: skip

    assert _until(joined(), tmp_path / "event", 2) == [("a", 1.5), ("b", 2.0)]
    produce(
        bootstrap,
        rates,
        [
            _keyed({"currency": "A"}, None, T0 + 4 * H),
            _keyed({"currency": "C"}, {"currency": "C", "rate": 3.0}, T0 + 9 * H),
        ],
    )
    produce(bootstrap, orders, [order("a5", "A", 5), order("c10", "C", 10)])
    # A deleted at 04:00; c10 waits for the rates' watermark
    assert _until(joined(), tmp_path / "event", 1) == [("a5", None)]
    assert _until(joined(None), tmp_path / "latest", 4) == [("a", None), ("a5", None), ("b", 2.0), ("c10", 3.0)]


def _until(df, checkpoint, rows: int) -> list[tuple]:
    sink = Collector()
    query = start_collecting(df, str(checkpoint), sink)
    try:
        wait_for(lambda: _committed(query, sink, rows) or query.exception(), f"{rows} rows", timeout=180)
        assert query.exception() is None, query.exception()
    finally:
        query.stop()
    return sorted(sink.rows)


def _committed(query, sink: Collector, rows: int) -> bool:
    """`rows` rows came and their batch is committed (a batch stopped before its commit runs again on restart)."""
    progress = query.lastProgress
    return len(sink.rows) >= rows and progress is not None and progress["batchId"] >= max(sink.batches)
