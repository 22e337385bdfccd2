"""Save modes and streaming output modes against the real broker: append, overwrite, complete, and streaming
aggregations through `connector.upsert_writer` (foreachBatch), exactly-once across a replayed micro-batch."""

from __future__ import annotations

import orjson
import pytest
from pyspark.sql import functions as F
from pyspark_upsert_kafka import upsert_writer

from tests.support.checkpoints import uncommit
from tests.support.kafka_io import consume_all, produce
from tests.support.write_helpers import records, table, write

SCHEMA = "id INT, name STRING"
CHANGES = SCHEMA + ", _change_type STRING"
ORDERS = "order_id INT, category STRING, price DOUBLE, _change_type STRING"
SALES = "category STRING, num BIGINT, price DOUBLE"


def test_overwrite_makes_the_topics_table_equal_to_the_dataframe(spark, new_topic, options, bootstrap):
    topic = new_topic()
    opts = options(topic)
    write(spark, opts, [(1, "a", "upsert"), (2, "b", "upsert"), (3, "c", "upsert"), (4, "d", "upsert")], CHANGES)
    write(spark, opts, [(4, None, "delete")], CHANGES)

    write(spark, opts, [(2, "b2"), (5, "e")], SCHEMA, mode="overwrite")

    assert table(spark, opts, SCHEMA) == [(2, "b2"), (5, "e")]
    after = records(bootstrap, topic)[5:]
    # Tombstones only for the keys that were live and are not in the DataFrame (4 was deleted already).
    assert sorted(k["id"] for k, v in after if v is None) == [1, 3]
    assert sorted(k["id"] for k, v in after if v is not None) == [2, 5]


def test_overwrite_of_a_topic_pattern_is_refused_before_writing(spark, new_topic, options, bootstrap):
    # It tombstoned the keys of every topic matching the pattern, also of topics the DataFrame has no row for.
    written, other = new_topic(), new_topic()
    write(spark, options(other), [(1, "a")], SCHEMA)
    opts = options(written) | {"topic": "", "topic-pattern": f"({written}|{other})", "metadata.columns": "topic"}
    rows = spark.createDataFrame([(2, "b", written)], SCHEMA + ", topic STRING")
    with pytest.raises(Exception, match=r"overwrite with option 'topic-pattern'.*list the topics with option 'topic'"):
        rows.write.format("upsert-kafka").options(**opts).mode("overwrite").save()

    assert consume_all(bootstrap, written) == []
    assert len(consume_all(bootstrap, other)) == 1, "no tombstone reached the other topic"


def test_append_adds_rows_and_keeps_the_other_keys(spark, new_topic, options):
    opts = options(new_topic())
    write(spark, opts, [(1, "a"), (2, "b")], SCHEMA)
    write(spark, opts, [(2, "b2"), (3, "c")], SCHEMA, mode="append")

    assert table(spark, opts, SCHEMA) == [(1, "a"), (2, "b2"), (3, "c")]


@pytest.mark.parametrize("mode", ["error", "ignore"])
def test_error_and_ignore_save_modes_are_refused_by_spark_before_writing(spark, new_topic, options, bootstrap, mode):
    topic = new_topic()
    with pytest.raises(Exception, match=r"UNSUPPORTED_DATA_SOURCE_SAVE_MODE.*\"Append\" or \"Overwrite\""):
        write(spark, options(topic), [(1, "a")], SCHEMA, mode=mode)
    assert consume_all(bootstrap, topic) == []


def _orders(bootstrap: str, topic: str, orders: list[tuple[int, str, float]]) -> None:
    produce(
        bootstrap,
        topic,
        [
            (orjson.dumps({"order_id": o}), orjson.dumps({"order_id": o, "category": c, "price": p}))
            for o, c, p in orders
        ],
    )


def _sales(spark, options, orders_topic: str):
    orders = spark.readStream.format("upsert-kafka").options(**options(orders_topic, {"key.fields": "order_id"}))
    return (
        orders.schema(ORDERS).load().groupBy("category").agg(F.count("*").alias("num"), F.sum("price").alias("price"))
    )


def test_complete_output_mode_writes_the_aggregate_table(spark, new_topic, options, bootstrap, tmp_path):
    source, target = new_topic(), new_topic(partitions=2)
    _orders(bootstrap, source, [(1, "books", 10.0), (2, "games", 5.0), (3, "books", 2.5)])
    query = (
        _sales(spark, options, source)
        .writeStream.format("upsert-kafka")
        .outputMode("complete")
        .options(**options(target, {"key.fields": "category"}))
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None, query.exception()

    assert table(spark, options(target, {"key.fields": "category"}), SALES) == [("books", 2, 12.5), ("games", 1, 5.0)]


def test_upsert_writer_writes_a_streaming_aggregation_in_update_mode_exactly_once(
    spark, new_topic, options, bootstrap, tmp_path
):
    source, target = new_topic(), new_topic(partitions=2)
    checkpoint = tmp_path / "cp"
    sink = options(target, {"key.fields": "category"}) | {
        "sink.delivery-guarantee": "exactly-once",
        "sink.transactional-id-prefix": target,
    }

    def run() -> None:
        query = (
            _sales(spark, options, source)
            .writeStream.outputMode("update")
            .foreachBatch(upsert_writer(**sink))
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(120)
        assert query.exception() is None, query.exception()

    _orders(bootstrap, source, [(1, "books", 10.0), (2, "games", 5.0), (3, "books", 2.5)])
    run()
    # Batch 0 wrote its two groups, but Spark did not log it: the restart replays it before batch 1.
    uncommit(checkpoint, 0)
    _orders(bootstrap, source, [(4, "games", 1.0), (5, "toys", 7.0)])
    run()

    assert table(spark, sink, SALES) == [("books", 2, 12.5), ("games", 2, 6.0), ("toys", 1, 7.0)]
    # Update mode writes the groups each batch changed, once: books, games; then games, toys.
    assert sorted(k["category"] for k, _ in records(bootstrap, target)) == ["books", "games", "games", "toys"]


def test_upsert_writer_rejects_an_unknown_option_before_the_query_starts():
    with pytest.raises(ValueError, match=r"unknown option 'sink.buffer-flush.max-row'. Did you mean"):
        upsert_writer(**{"sink.buffer-flush.max-row": "10"})
